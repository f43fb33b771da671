/** SSRF address policy (lib/net/address-policy.ts): every range, mapped IPv6, odd IPv4 spellings. */
import { describe, expect, it } from "vitest";
import { embeddedIPv4, isBlockedAddress, parseHostLiteral } from "#lib/net/address-policy.ts";

const STRICT = { allowPrivate: false, allowLoopback: false };
const LOOPBACK = { allowPrivate: false, allowLoopback: true };
const PRIVATE = { allowPrivate: true, allowLoopback: false };
const OPEN = { allowPrivate: true, allowLoopback: true };

describe("isBlockedAddress: always blocked", () => {
  const always = [
    "169.254.169.254",
    "169.254.0.1",
    "169.254.255.255",
    "0.0.0.0",
    "0.1.2.3",
    "224.0.0.1",
    "239.255.255.250",
    "255.255.255.255",
    "240.0.0.1",
    "::",
    "fd00:ec2::254",
    "fd00:ec2::253",
    "fe80::1",
    "febf:ffff::1",
    "fe80::1%eth0",
    "ff02::1",
    "ff0e::fb",
    "[fd00:ec2::254]",
  ];
  it.each(always)("%s is blocked even when private and loopback are allowed", (ip) => {
    const verdict = isBlockedAddress(ip, OPEN);
    expect(verdict.blocked).toBe(true);
    expect(verdict.reason).toBeTruthy();
  });

  it("names the metadata range in the reason", () => {
    expect(isBlockedAddress("169.254.169.254", OPEN).reason).toMatch(/metadata/);
    expect(isBlockedAddress("fd00:ec2::254", OPEN).reason).toMatch(/metadata/);
  });
});

describe("isBlockedAddress: private ranges", () => {
  const privateAddresses = [
    "10.0.0.1",
    "10.255.255.255",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "100.64.0.1",
    "100.127.255.255",
    "100.100.100.200",
    "fc00::1",
    "fd12:3456:789a::1",
    "fdff:ffff::1",
  ];
  it.each(privateAddresses)("%s is blocked unless allowPrivate", (ip) => {
    expect(isBlockedAddress(ip, STRICT)).toMatchObject({ blocked: true });
    expect(isBlockedAddress(ip, LOOPBACK)).toMatchObject({ blocked: true });
    expect(isBlockedAddress(ip, PRIVATE)).toEqual({ blocked: false });
    expect(isBlockedAddress(ip, OPEN)).toEqual({ blocked: false });
  });

  it("labels CGNAT and unique-local addresses", () => {
    expect(isBlockedAddress("100.64.0.1", STRICT).reason).toMatch(/carrier-grade NAT/);
    expect(isBlockedAddress("fd12::1", STRICT).reason).toMatch(/unique local/);
    expect(isBlockedAddress("172.20.1.1", STRICT).reason).toMatch(/172\.16\.0\.0\/12/);
  });

  it("keeps range edges exact", () => {
    for (const ip of [
      "172.15.255.255",
      "172.32.0.0",
      "100.63.255.255",
      "100.128.0.0",
      "11.0.0.0",
      "192.169.0.1",
    ]) {
      expect(isBlockedAddress(ip, STRICT), ip).toEqual({ blocked: false });
    }
    expect(isBlockedAddress("fe00::1", STRICT)).toEqual({ blocked: false });
  });
});

describe("isBlockedAddress: loopback", () => {
  it.each(["127.0.0.1", "127.1.2.3", "127.255.255.254", "::1", "[::1]", "0:0:0:0:0:0:0:1"])(
    "%s is blocked unless allowLoopback",
    (ip) => {
      expect(isBlockedAddress(ip, STRICT)).toMatchObject({ blocked: true });
      expect(isBlockedAddress(ip, STRICT).reason).toMatch(/loopback/);
      expect(isBlockedAddress(ip, PRIVATE)).toMatchObject({ blocked: true });
      expect(isBlockedAddress(ip, LOOPBACK)).toEqual({ blocked: false });
    },
  );
});

describe("isBlockedAddress: public addresses", () => {
  it.each(["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2a00:1450:4001:82b::200e"])(
    "%s is allowed under the strict policy",
    (ip) => {
      expect(isBlockedAddress(ip, STRICT)).toEqual({ blocked: false });
    },
  );

  it("blocks anything that is not an IP address", () => {
    for (const value of ["localhost", "example.com", "", "127.0.0.1.nip.io", "2130706433", "1.2.3"]) {
      expect(isBlockedAddress(value, OPEN)).toEqual({ blocked: true, reason: "not an IP address" });
    }
  });
});

describe("isBlockedAddress: IPv6 addresses carrying an IPv4 address", () => {
  it("judges IPv4-mapped addresses as the embedded IPv4 address, in both spellings", () => {
    for (const ip of [
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "0:0:0:0:0:ffff:7f00:0001",
      "[::ffff:127.0.0.1]",
    ]) {
      expect(isBlockedAddress(ip, STRICT).reason, ip).toMatch(/loopback.*embedded/);
      expect(isBlockedAddress(ip, LOOPBACK), ip).toEqual({ blocked: false });
    }
    expect(isBlockedAddress("::ffff:169.254.169.254", OPEN).reason).toMatch(/metadata/);
    expect(isBlockedAddress("::ffff:a9fe:a9fe", OPEN)).toMatchObject({ blocked: true });
    expect(isBlockedAddress("::ffff:10.0.0.1", STRICT)).toMatchObject({ blocked: true });
    expect(isBlockedAddress("::ffff:10.0.0.1", PRIVATE)).toEqual({ blocked: false });
    expect(isBlockedAddress("::ffff:8.8.8.8", STRICT)).toEqual({ blocked: false });
  });

  it("judges NAT64, IPv4-compatible and 6to4 addresses as the embedded IPv4 address", () => {
    expect(isBlockedAddress("64:ff9b::127.0.0.1", STRICT)).toMatchObject({ blocked: true });
    expect(isBlockedAddress("64:ff9b::7f00:1", STRICT)).toMatchObject({ blocked: true });
    expect(isBlockedAddress("64:ff9b::a9fe:a9fe", OPEN)).toMatchObject({ blocked: true });
    expect(isBlockedAddress("64:ff9b::808:808", STRICT)).toEqual({ blocked: false });
    expect(isBlockedAddress("64:ff9b:1::a9fe:a9fe", OPEN)).toMatchObject({ blocked: true });
    expect(isBlockedAddress("64:ff9b:1::808:808", STRICT)).toMatchObject({ blocked: true });
    expect(isBlockedAddress("::127.0.0.1", STRICT)).toMatchObject({ blocked: true });
    expect(isBlockedAddress("::a9fe:a9fe", OPEN)).toMatchObject({ blocked: true });
    expect(isBlockedAddress("2002:7f00:1::", STRICT)).toMatchObject({ blocked: true });
    expect(isBlockedAddress("2002:a9fe:a9fe::1", OPEN)).toMatchObject({ blocked: true });
    expect(isBlockedAddress("2002:808:808::1", STRICT)).toEqual({ blocked: false });
  });

  it("extracts the embedded address", () => {
    expect(embeddedIPv4("::ffff:127.0.0.1")).toBe("127.0.0.1");
    expect(embeddedIPv4("::ffff:7f00:1")).toBe("127.0.0.1");
    expect(embeddedIPv4("64:ff9b::c0a8:101")).toBe("192.168.1.1");
    expect(embeddedIPv4("2002:c0a8:101::")).toBe("192.168.1.1");
    expect(embeddedIPv4("::1")).toBeUndefined();
    expect(embeddedIPv4("::")).toBeUndefined();
    expect(embeddedIPv4("2606:4700:4700::1111")).toBeUndefined();
  });
});

describe("parseHostLiteral", () => {
  it.each([
    ["2130706433", "127.0.0.1"],
    ["0177.0.0.1", "127.0.0.1"],
    ["0x7f.1", "127.0.0.1"],
    ["0x7f000001", "127.0.0.1"],
    ["0X7F.0.0.1", "127.0.0.1"],
    ["127.1", "127.0.0.1"],
    ["127.0.1", "127.0.0.1"],
    ["127.0.0.1", "127.0.0.1"],
    ["127.0.0.1.", "127.0.0.1"],
    ["0", "0.0.0.0"],
    ["0x", "0.0.0.0"],
    ["0xa9fea9fe", "169.254.169.254"],
    ["2852039166", "169.254.169.254"],
    ["025177524776", "169.254.169.254"],
    ["10.0xff", "10.0.0.255"],
    ["4294967295", "255.255.255.255"],
  ])("reads %s as %s, exactly like the WHATWG URL parser", (host, ip) => {
    expect(parseHostLiteral(host)).toBe(ip);
    expect(new URL(`http://${host}/`).hostname).toBe(ip);
  });

  it("unwraps and compresses IPv6 hosts as the URL parser does", () => {
    expect(parseHostLiteral("[::1]")).toBe("::1");
    expect(parseHostLiteral("[0:0:0:0:0:0:0:1]")).toBe("::1");
    expect(parseHostLiteral("[::ffff:127.0.0.1]")).toBe("::ffff:7f00:1");
    expect(new URL("http://[::ffff:127.0.0.1]/").hostname).toBe("[::ffff:7f00:1]");
    expect(parseHostLiteral("FD00:EC2::254")).toBe("fd00:ec2::254");
  });

  it("returns null for domain names", () => {
    for (const host of ["example.com", "localhost", "127.0.0.1.nip.io", "0x7f.example", "1.2.3.4.5.com"]) {
      expect(parseHostLiteral(host), host).toBeNull();
    }
  });

  it.each(["1.2.3.09", "foo.1", "256.1.1.1", "1.2.3.4.5", "4294967296", "0x1.0x100.0.0", "1.2.65536"])(
    "rejects %s, as the URL parser does",
    (host) => {
      expect(() => parseHostLiteral(host)).toThrow(TypeError);
      expect(() => new URL(`http://${host}/`)).toThrow(TypeError);
    },
  );

  it("agrees with isBlockedAddress through new URL", () => {
    for (const host of ["2130706433", "0177.0.0.1", "0x7f.1", "127.1", "[::ffff:7f00:1]", "[::1]"]) {
      const hostname = new URL(`http://${host}/`).hostname;
      expect(isBlockedAddress(hostname, STRICT).blocked, host).toBe(true);
      expect(isBlockedAddress(parseHostLiteral(host)!, STRICT).blocked, host).toBe(true);
    }
    expect(isBlockedAddress(new URL("http://0xa9fea9fe/").hostname, OPEN).reason).toMatch(/metadata/);
  });
});
