/**
 * IP allow and deny lists over the caller's address (docs/filters.md): CIDR ranges of IPv4 and
 * IPv6, matched with node:net's BlockList (no parsing of addresses here: `isIP` decides what an
 * address is, BlockList does the prefix arithmetic). Pure and dependency-free, so the data plane's
 * bundle can use it.
 *
 * IPv4-mapped IPv6 (`::ffff:10.1.2.3`, `::ffff:a01:203`) is the same caller as its IPv4 address:
 * BlockList compares IPv4 addresses in their mapped IPv6 form, so an IPv4 range matches a mapped
 * caller and a range of mapped addresses (`::ffff:10.0.0.0/104`) matches the IPv4 caller. A
 * consequence: an IPv6 range that contains `::ffff:0:0/96` (`::/0`, `::/1`) also covers every
 * IPv4 caller.
 */
import { BlockList, isIP } from "node:net";

/** A CIDR range as stored: the address as written and the prefix length. */
export interface CidrRange {
  address: string;
  prefix: number;
  family: "ipv4" | "ipv6";
}

const DIGITS = /^[0-9]{1,3}$/;

/**
 * A CIDR range (`10.0.0.0/8`, `2001:db8::/32`), or a single address (`/32` or `/128` implied);
 * a problem in words when it is not one. Host bits below the prefix are allowed and ignored
 * (`10.1.2.3/8` is `10.0.0.0/8`). Zone identifiers (`fe80::1%eth0`) are refused: they are local
 * to a host and never a caller's address.
 */
export function parseCidr(text: string): CidrRange | { problem: string } {
  const slash = text.indexOf("/");
  const address = slash === -1 ? text : text.slice(0, slash);
  const version = address.includes("%") ? 0 : isIP(address);
  if (version === 0) return { problem: "must be an IPv4 or IPv6 address or CIDR range" };
  const family = version === 4 ? "ipv4" : "ipv6";
  const max = version === 4 ? 32 : 128;
  if (slash === -1) return { address, prefix: max, family };
  const length = text.slice(slash + 1);
  if (!DIGITS.test(length) || Number(length) > max)
    return { problem: `must have a prefix length from 0 to ${max}` };
  return { address, prefix: Number(length), family };
}

/** The caller's address family, or undefined when it is not an IP address. */
function familyOf(address: string): "ipv4" | "ipv6" | undefined {
  const version = isIP(address);
  return version === 4 ? "ipv4" : version === 6 ? "ipv6" : undefined;
}

function blockListOf(ranges: readonly CidrRange[]): BlockList | undefined {
  if (ranges.length === 0) return undefined;
  const list = new BlockList();
  for (const range of ranges) list.addSubnet(range.address, range.prefix, range.family);
  return list;
}

export type IpDecision = "allowed" | "denied" | "notAllowed";

export interface IpFilter {
  /**
   * `denied` when the address is in a deny range (deny wins), `notAllowed` when there is an allow
   * list and the address is in none of its ranges, else `allowed`. An address that is not an IP
   * address is `denied` when any list is set (it cannot be proven outside a deny range).
   */
  check(address: string): IpDecision;
  /** True when neither list has a range: every caller passes without a check. */
  readonly empty: boolean;
}

/** Compile allow and deny lists of CIDR texts (validated on save; an invalid one is skipped here). */
export function compileIpFilter(allow: readonly string[], deny: readonly string[]): IpFilter {
  const ranges = (texts: readonly string[]) =>
    texts.map(parseCidr).filter((range): range is CidrRange => "address" in range);
  const allowList = blockListOf(ranges(allow));
  const denyList = blockListOf(ranges(deny));
  const empty = !allowList && !denyList;
  return {
    empty,
    check(address) {
      if (empty) return "allowed";
      const family = familyOf(address);
      if (!family) return "denied";
      if (denyList?.check(address, family)) return "denied";
      if (allowList && !allowList.check(address, family)) return "notAllowed";
      return "allowed";
    },
  };
}
