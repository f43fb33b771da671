/** Accept negotiation (lib/http/content-negotiation.ts) and the usage report's CSV rendering. */
import { describe, expect, it } from "vitest";
import { csvField, USAGE_CSV_COLUMNS, usageCsv } from "#lib/domain/msp-usage.ts";
import { headerValue, preferredMediaType } from "#lib/http/content-negotiation.ts";

const OFFERED = ["application/json", "text/csv"] as const;

describe("preferredMediaType", () => {
  it.each([
    [undefined, "application/json"],
    ["", "application/json"],
    ["*/*", "application/json"],
    ["text/csv", "text/csv"],
    ["TEXT/CSV", "text/csv"],
    ["text/csv; charset=utf-8", "text/csv"],
    ["text/*", "text/csv"],
    ["application/json", "application/json"],
    ["application/json, text/csv", "application/json"], // a tie: the first offered
    ["text/csv, application/json", "application/json"],
    ["application/json;q=0.5, text/csv", "text/csv"],
    ["text/csv;q=0.9, */*;q=0.1", "text/csv"],
    ["text/csv;q=0, */*", "application/json"],
    ["text/html", "application/json"], // nothing acceptable: JSON, not 406
    ["application/xml, text/csv;q=0.2", "text/csv"],
    ["garbage", "application/json"],
  ])("Accept %s: %s", (accept, expected) => {
    expect(preferredMediaType(accept, OFFERED)).toBe(expected);
  });

  it("reads a header whatever the case of its name", () => {
    expect(headerValue({ ACCEPT: "text/csv" }, "accept")).toBe("text/csv");
    expect(headerValue(null, "accept")).toBeUndefined();
  });
});

describe("usage CSV", () => {
  it.each([
    ["plain", "plain"],
    ["a,b", '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ["line\nbreak", '"line\nbreak"'],
    ["=SUM(A1)", "'=SUM(A1)"], // a formula is defused
    ["-1+2", "'-1+2"],
    [-1.5, "-1.5"], // numbers are numbers
  ])("field %j is %s", (value, text) => {
    expect(csvField(value)).toBe(text);
  });

  it("renders a header and one line per row, amounts to 9 places, CRLF", () => {
    const csv = usageCsv({
      month: "2026-11",
      currency: "usd",
      usage: [
        {
          clientId: "c1",
          clientName: "Contoso, Ltd",
          billingTo: "msp",
          requests: 3,
          apiSeconds: 1.234,
          clientRate: 0.9,
          amountAtClientRates: 0.00011106,
          mspRate: 0.75,
          amountAtMspRates: 0.00009255,
        },
      ],
    });
    expect(csv).toBe(
      `${USAGE_CSV_COLUMNS.join(",")}\r\n2026-11,c1,"Contoso, Ltd",msp,3,1.234,0.9,0.000111060,0.75,0.000092550,usd\r\n`,
    );
  });
});
