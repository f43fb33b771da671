/** The HTML part of an e-mail made from its text (lib/email.ts textToHtml): escaped, paragraphs, links. */
import { describe, expect, it } from "vitest";
import { textToHtml } from "#lib/email.ts";

describe("textToHtml", () => {
  it("escapes every value, keeps paragraphs and line breaks", () => {
    expect(textToHtml(`<b>Eve & "Co"</b> O'Brien\nline two\n\nnext paragraph`)).toBe(
      "<!doctype html><html><body><p>&#60;b&#62;Eve &#38; &#34;Co&#34;&#60;/b&#62; O&#39;Brien<br>line two</p><p>next paragraph</p></body></html>",
    );
  });

  it("makes links clickable, stopping before trailing punctuation, with & escaped in the href", () => {
    const html = textToHtml("Sign in at https://a.example/x?e=a%40b&code=1, or http://b.example.");
    expect(html).toContain(
      '<a href="https://a.example/x?e=a%40b&#38;code=1">https://a.example/x?e=a%40b&#38;code=1</a>, or ',
    );
    expect(html).toContain('<a href="http://b.example">http://b.example</a>.');
  });

  it("does not turn a javascript: text into a link", () => {
    expect(textToHtml("javascript:alert(1)")).not.toContain("<a");
  });
});
