/**
 * Which IP addresses the gateway may connect to on behalf of a user (SSRF policy). Pure: no DNS,
 * no sockets. `lib/net/outbound.ts` applies it to literal hosts before connecting and to every
 * address DNS returns at connect time. Documented for operators in docs/outbound-requests.md.
 *
 * Three classes of ranges:
 * - always blocked: unspecified, "this network", link-local (includes the cloud metadata service
 *   169.254.169.254 and AWS's fd00:ec2::/32 instance services), multicast, reserved/broadcast;
 * - private (blocked unless `allowPrivate`): RFC 1918, CGNAT, unique-local IPv6 and friends;
 * - loopback (blocked unless `allowLoopback`): 127.0.0.0/8 and ::1.
 * IPv6 addresses that carry an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64, 6to4) are also
 * judged as the embedded IPv4 address; the stricter verdict wins.
 */
import { BlockList, isIP } from "node:net";

export interface AddressPolicy {
  allowPrivate: boolean;
  allowLoopback: boolean;
}

export interface AddressVerdict {
  blocked: boolean;
  reason?: string;
}

type RangeClass = "always" | "private" | "loopback";

interface Range {
  cidr: string;
  cls: RangeClass;
  reason: string;
}

const IPV4_RANGES: Range[] = [
  { cidr: "0.0.0.0/8", cls: "always", reason: "unspecified or 'this network' address (0.0.0.0/8)" },
  { cidr: "169.254.0.0/16", cls: "always", reason: "link-local or cloud metadata address (169.254.0.0/16)" },
  { cidr: "224.0.0.0/4", cls: "always", reason: "multicast address (224.0.0.0/4)" },
  { cidr: "240.0.0.0/4", cls: "always", reason: "reserved or broadcast address (240.0.0.0/4)" },
  { cidr: "127.0.0.0/8", cls: "loopback", reason: "loopback address (127.0.0.0/8)" },
  { cidr: "10.0.0.0/8", cls: "private", reason: "private address (10.0.0.0/8)" },
  { cidr: "172.16.0.0/12", cls: "private", reason: "private address (172.16.0.0/12)" },
  { cidr: "192.168.0.0/16", cls: "private", reason: "private address (192.168.0.0/16)" },
  { cidr: "100.64.0.0/10", cls: "private", reason: "carrier-grade NAT address (100.64.0.0/10)" },
  { cidr: "192.0.0.0/24", cls: "private", reason: "IETF protocol assignment address (192.0.0.0/24)" },
  { cidr: "198.18.0.0/15", cls: "private", reason: "benchmarking address (198.18.0.0/15)" },
];

const IPV6_RANGES: Range[] = [
  { cidr: "::/128", cls: "always", reason: "unspecified address (::)" },
  { cidr: "fd00:ec2::/32", cls: "always", reason: "cloud metadata address (fd00:ec2::/32)" },
  { cidr: "fe80::/10", cls: "always", reason: "link-local address (fe80::/10)" },
  { cidr: "ff00::/8", cls: "always", reason: "multicast address (ff00::/8)" },
  { cidr: "::1/128", cls: "loopback", reason: "loopback address (::1)" },
  { cidr: "fc00::/7", cls: "private", reason: "unique local address (fc00::/7)" },
  { cidr: "fec0::/10", cls: "private", reason: "site-local address (fec0::/10)" },
  { cidr: "64:ff9b:1::/48", cls: "private", reason: "local-use NAT64 address (64:ff9b:1::/48)" },
];

interface CompiledRange extends Range {
  list: BlockList;
}

function compile(ranges: Range[], family: "ipv4" | "ipv6"): CompiledRange[] {
  return ranges.map((range) => {
    const [network, prefix] = range.cidr.split("/") as [string, string];
    const list = new BlockList();
    list.addSubnet(network, Number(prefix), family);
    return { ...range, list };
  });
}

const COMPILED_V4 = compile(IPV4_RANGES, "ipv4");
const COMPILED_V6 = compile(IPV6_RANGES, "ipv6");

function verdictFor(ranges: CompiledRange[], ip: string, family: "ipv4" | "ipv6", policy: AddressPolicy) {
  for (const range of ranges) {
    if (!range.list.check(ip, family)) continue;
    if (range.cls === "private" && policy.allowPrivate) return { blocked: false };
    if (range.cls === "loopback" && policy.allowLoopback) return { blocked: false };
    return { blocked: true, reason: range.reason };
  }
  return { blocked: false };
}

/** The eight 16-bit groups of a valid IPv6 address (a dotted IPv4 tail is allowed). */
function ipv6Groups(ip: string): number[] {
  let text = ip;
  const lastColon = text.lastIndexOf(":");
  const tail = text.slice(lastColon + 1);
  if (tail.includes(".")) {
    const [a = 0, b = 0, c = 0, d = 0] = tail.split(".").map(Number);
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const parse = (part: string) =>
    part === "" ? [] : part.split(":").map((group) => Number.parseInt(group, 16));
  const doubleColon = text.indexOf("::");
  if (doubleColon === -1) return parse(text);
  const head = parse(text.slice(0, doubleColon));
  const rest = parse(text.slice(doubleColon + 2));
  const zeros = new Array<number>(Math.max(8 - head.length - rest.length, 0)).fill(0);
  return [...head, ...zeros, ...rest];
}

function ipv4FromGroups(high: number, low: number): string {
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join(".");
}

/**
 * The IPv4 address an IPv6 address stands for, if any: IPv4-mapped (::ffff:0:0/96),
 * IPv4-compatible (::/96), NAT64 (64:ff9b::/96 and 64:ff9b:1::/48 with a /96 layout) and 6to4
 * (2002::/16).
 */
export function embeddedIPv4(ipv6: string): string | undefined {
  const g = ipv6Groups(ipv6);
  if (g.length !== 8) return undefined;
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const zeroUpTo5 = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  if (zeroUpTo5 && g5 === 0xffff) return ipv4FromGroups(g6, g7);
  // IPv4-compatible (deprecated); "::" and "::1" themselves are judged as IPv6.
  if (zeroUpTo5 && g5 === 0 && (g6 !== 0 || g7 > 1)) return ipv4FromGroups(g6, g7);
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0)
    return ipv4FromGroups(g6, g7);
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return ipv4FromGroups(g6, g7);
  if (g0 === 0x2002) return ipv4FromGroups(g1, g2);
  return undefined;
}

/** Removes brackets and an IPv6 zone id ("fe80::1%eth0"). */
function bareAddress(ip: string): string {
  let text = ip.trim();
  if (text.startsWith("[") && text.endsWith("]")) text = text.slice(1, -1);
  const zone = text.indexOf("%");
  if (zone !== -1 && text.includes(":")) text = text.slice(0, zone);
  return text.toLowerCase();
}

/**
 * Judges one IP address (IPv4 dotted quad or IPv6, brackets allowed). Anything that is not an IP
 * address is blocked: callers must resolve names first.
 */
export function isBlockedAddress(ip: string, policy: AddressPolicy): AddressVerdict {
  const address = bareAddress(ip);
  const family = isIP(address);
  if (family === 4) return verdictFor(COMPILED_V4, address, "ipv4", policy);
  if (family !== 6) return { blocked: true, reason: "not an IP address" };
  const embedded = embeddedIPv4(address);
  if (embedded !== undefined) {
    const inner = verdictFor(COMPILED_V4, embedded, "ipv4", policy);
    if (inner.blocked) return { blocked: true, reason: `${inner.reason}, embedded in IPv6 address` };
  }
  return verdictFor(COMPILED_V6, address, "ipv6", policy);
}

/** WHATWG URL "IPv4 number parser": decimal, 0x hex (may be empty) or leading-zero octal. */
function parseIPv4Number(part: string): number | undefined {
  if (part === "") return undefined;
  let digits = part;
  let radix = 10;
  if (/^0x/i.test(digits)) {
    digits = digits.slice(2);
    radix = 16;
  } else if (digits.length > 1 && digits.startsWith("0")) {
    digits = digits.slice(1);
    radix = 8;
  }
  if (digits === "") return 0;
  const valid = radix === 16 ? /^[0-9a-f]+$/i : radix === 8 ? /^[0-7]+$/ : /^[0-9]+$/;
  if (!valid.test(digits)) return undefined;
  const value = Number.parseInt(digits, radix);
  return Number.isSafeInteger(value) ? value : Number.POSITIVE_INFINITY;
}

function endsInANumber(host: string): boolean {
  const parts = host.split(".");
  if (parts[parts.length - 1] === "") {
    if (parts.length === 1) return false;
    parts.pop();
  }
  const last = parts[parts.length - 1] ?? "";
  if (/^[0-9]+$/.test(last)) return true;
  return parseIPv4Number(last) !== undefined;
}

/**
 * The canonical IP address a URL host denotes, or null when the host is a domain name. IPv4 hosts
 * are read as the WHATWG URL parser reads them, so `2130706433`, `0177.0.0.1`, `0x7f.1` and
 * `127.1` all give `127.0.0.1`; IPv6 hosts may be bracketed and come back without brackets in
 * their compressed form. Throws a TypeError for a host the URL parser rejects as an invalid IPv4
 * address (e.g. `1.2.3.09`, `foo.1`, `256.1.1.1`).
 */
export function parseHostLiteral(host: string): string | null {
  const text = host.trim().toLowerCase();
  if (text.startsWith("[") || text.includes(":")) {
    const inner = bareAddress(text);
    if (isIP(inner) !== 6) throw new TypeError("Invalid IPv6 host");
    return new URL(`http://[${inner}]/`).hostname.slice(1, -1);
  }
  if (!endsInANumber(text)) return null;
  const parts = text.split(".");
  if (parts[parts.length - 1] === "" && parts.length > 1) parts.pop();
  if (parts.length > 4) throw new TypeError("Invalid IPv4 host");
  const numbers = parts.map(parseIPv4Number);
  const values = numbers.filter((n) => n !== undefined);
  const last = values.pop();
  if (last === undefined || values.length + 1 < numbers.length) throw new TypeError("Invalid IPv4 host");
  if (values.some((n) => n > 255) || last >= 256 ** (5 - parts.length)) {
    throw new TypeError("Invalid IPv4 host");
  }
  let ipv4 = last;
  values.forEach((n, i) => {
    ipv4 += n * 256 ** (3 - i);
  });
  return [ipv4 >>> 24, (ipv4 >>> 16) & 0xff, (ipv4 >>> 8) & 0xff, ipv4 & 0xff].join(".");
}
