/** IP allow and deny lists (lib/net/ip-filter.ts; docs/filters.md): CIDR parsing and matching, IPv4, IPv6, IPv4-mapped IPv6. */
import { describe, expect, it } from "vitest";
import { compileIpFilter, parseCidr } from "#lib/net/ip-filter.ts";

describe("parseCidr", () => {
  it.each([
    ["10.0.0.0/8", { address: "10.0.0.0", prefix: 8, family: "ipv4" }],
    ["203.0.113.7", { address: "203.0.113.7", prefix: 32, family: "ipv4" }],
    ["0.0.0.0/0", { address: "0.0.0.0", prefix: 0, family: "ipv4" }],
    ["2001:db8::/32", { address: "2001:db8::", prefix: 32, family: "ipv6" }],
    ["::1", { address: "::1", prefix: 128, family: "ipv6" }],
    ["::ffff:10.0.0.0/104", { address: "::ffff:10.0.0.0", prefix: 104, family: "ipv6" }],
    ["10.1.2.3/8", { address: "10.1.2.3", prefix: 8, family: "ipv4" }],
  ])("accepts %s", (text, range) => {
    expect(parseCidr(text)).toEqual(range);
  });

  it.each([
    ["10.0.0.0/33", /prefix length from 0 to 32/],
    ["2001:db8::/129", /prefix length from 0 to 128/],
    ["10.0.0.0/", /prefix length/],
    ["10.0.0.0/-1", /prefix length/],
    ["10.0.0.0/8/8", /prefix length/],
    ["10.0.0.0/ 8", /prefix length/],
    ["10.0.0.256/8", /IPv4 or IPv6/],
    ["010.0.0.1", /IPv4 or IPv6/],
    ["fe80::1%eth0/64", /IPv4 or IPv6/],
    ["example.com", /IPv4 or IPv6/],
    ["", /IPv4 or IPv6/],
  ])("refuses %s", (text, problem) => {
    const parsed = parseCidr(text);
    expect("problem" in parsed && parsed.problem).toMatch(problem);
  });
});

describe("compileIpFilter", () => {
  it("lets every caller through when both lists are empty", () => {
    const filter = compileIpFilter([], []);
    expect(filter.empty).toBe(true);
    expect(filter.check("203.0.113.7")).toBe("allowed");
    expect(filter.check("not an address")).toBe("allowed");
  });

  it("allows only callers inside an allow range, IPv4 and IPv6", () => {
    const filter = compileIpFilter(["10.0.0.0/8", "2001:db8::/32"], []);
    expect(filter.check("10.200.3.4")).toBe("allowed");
    expect(filter.check("11.0.0.1")).toBe("notAllowed");
    expect(filter.check("2001:db8:1::5")).toBe("allowed");
    expect(filter.check("2001:DB8:0:0:0:0:0:1")).toBe("allowed");
    expect(filter.check("2001:db9::1")).toBe("notAllowed");
  });

  it("lets deny win over allow", () => {
    const filter = compileIpFilter(["10.0.0.0/8"], ["10.9.0.0/16", "2001:db8::1"]);
    expect(filter.check("10.9.1.1")).toBe("denied");
    expect(filter.check("10.8.1.1")).toBe("allowed");
    expect(filter.check("2001:db8::1")).toBe("denied");
    expect(filter.check("2001:db8::2")).toBe("notAllowed");
  });

  it("treats an IPv4-mapped IPv6 caller as its IPv4 address, both ways", () => {
    const v4Rules = compileIpFilter([], ["192.0.2.0/24"]);
    expect(v4Rules.check("::ffff:192.0.2.9")).toBe("denied");
    expect(v4Rules.check("::ffff:c000:209")).toBe("denied");
    expect(v4Rules.check("::ffff:192.0.3.9")).toBe("allowed");
    const mappedRules = compileIpFilter(["::ffff:192.0.2.0/120"], []);
    expect(mappedRules.check("192.0.2.9")).toBe("allowed");
    expect(mappedRules.check("192.0.3.9")).toBe("notAllowed");
  });

  it("matches host bits below the prefix as the network, and a bare address as one host", () => {
    expect(compileIpFilter(["10.1.2.3/8"], []).check("10.200.0.1")).toBe("allowed");
    const host = compileIpFilter(["203.0.113.7"], []);
    expect(host.check("203.0.113.7")).toBe("allowed");
    expect(host.check("203.0.113.8")).toBe("notAllowed");
  });

  it("refuses a caller that is not an IP address once any list is set", () => {
    expect(compileIpFilter(["10.0.0.0/8"], []).check("unknown")).toBe("denied");
    expect(compileIpFilter([], ["10.0.0.0/8"]).check("")).toBe("denied");
  });

  it("lets an IPv6 range holding the mapped space cover IPv4 callers (documented)", () => {
    expect(compileIpFilter([], ["::/0"]).check("198.51.100.1")).toBe("denied");
    expect(compileIpFilter([], ["0.0.0.0/0"]).check("2001:db8::1")).toBe("allowed");
  });
});
