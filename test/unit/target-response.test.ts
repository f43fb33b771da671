import { describe, expect, it } from "vitest";
import { confineSetCookie, forwardedResponseHeaders } from "#lib/data-plane/target-response.ts";

describe("confineSetCookie", () => {
  it.each([
    // [target's Set-Cookie, what the caller gets]
    ["sid=1", "sid=1; Path=/api/p1"],
    ["sid=1; Path=/", "sid=1; Path=/api/p1"],
    ["sid=1; Path=/v1/", "sid=1; Path=/api/p1/v1/"],
    ["sid=1; path=/v1; Path=/v2", "sid=1; Path=/api/p1/v2"],
    ["sid=1; Path=relative", "sid=1; Path=/api/p1"],
    ["sid=1; Path=", "sid=1; Path=/api/p1"],
    ["sid=1; Domain=gateway.example", "sid=1; Path=/api/p1"],
    ["sid=1; domain=.lambda-url.us-east-1.on.aws; Path=/x", "sid=1; Path=/api/p1/x"],
    ["sid=1;Domain=evil.example;Path=/", "sid=1; Path=/api/p1"],
    [
      "sid=a=b; Expires=Wed, 21 Oct 2037 07:28:00 GMT; Max-Age=60; Secure; HttpOnly; SameSite=Lax",
      "sid=a=b; Path=/api/p1; Expires=Wed, 21 Oct 2037 07:28:00 GMT; Max-Age=60; Secure; HttpOnly; SameSite=Lax",
    ],
    ["__Secure-id=1; Secure; Domain=x.example", "__Secure-id=1; Path=/api/p1; Secure"],
    // A Path that tries to leave the proxy stays a literal prefix under it (browsers match cookie
    // paths against the normalised request path, which never contains "..").
    ["sid=1; Path=/../other-proxy", "sid=1; Path=/api/p1/../other-proxy"],
  ])("%s -> %s", (input, expected) => {
    expect(confineSetCookie(input, "p1")).toEqual({ cookie: expected });
  });

  it.each(["__Host-sid=1; Path=/; Secure", "__HOST-sid=1; Secure; Path=/", " __host-x=1"])(
    "drops %s: a __Host- cookie cannot be confined to a proxy",
    (input) => {
      expect(confineSetCookie(input, "p1")).toEqual({ dropped: input.split("=")[0]!.trim() });
    },
  );
});

describe("forwardedResponseHeaders", () => {
  it("drops hop-by-hop, framing and Connection-named headers, and every service-proxy-* header", () => {
    const result = forwardedResponseHeaders(
      {
        "content-type": "application/json",
        "content-length": "12",
        "transfer-encoding": "chunked",
        "content-encoding": "gzip",
        connection: "keep-alive, X-Hop",
        "keep-alive": "timeout=5",
        "x-hop": "1",
        "service-proxy-warning": "all good, trust me",
        "Service-Proxy-Code": "proxy-access-granted",
        "service-proxy-message": "forged",
        "x-kept": ["a", "b"],
        vary: "accept",
      },
      "p1",
    );
    expect(result.headers).toEqual({ "content-type": "application/json", "x-kept": "a, b", vary: "accept" });
    expect(result.cookies).toEqual([]);
    expect(result.droppedCookies).toEqual([]);
  });

  it("keeps each Set-Cookie apart, confined to the proxy, and names the dropped ones", () => {
    const result = forwardedResponseHeaders(
      {
        "set-cookie": [
          "a=1; Domain=gw.example; Path=/",
          "b=2; Expires=Wed, 21 Oct 2037 07:28:00 GMT",
          "__Host-c=3; Path=/; Secure",
        ],
      },
      "prx-9",
    );
    expect(result.cookies).toEqual([
      "a=1; Path=/api/prx-9",
      "b=2; Path=/api/prx-9; Expires=Wed, 21 Oct 2037 07:28:00 GMT",
    ]);
    expect(result.droppedCookies).toEqual(["__Host-c"]);
    expect(result.headers).toEqual({});
  });
});
