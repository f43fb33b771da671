/**
 * The request and response transforms of a proxy (spec 2.10, 4.10; docs/transforms.md): the list
 * (priority, mode, active), activate or deactivate, delete, and create or edit in a code editor
 * (CodeMirror 6, TypeScript). The API's validation errors appear at their line, as lint diagnostics
 * in the editor and as text next to it. CodeMirror is imported here only: this page is its own chunk.
 */
import { javascript } from "@codemirror/lang-javascript";
import { closeLintPanel, type Diagnostic, lintGutter, openLintPanel, setDiagnostics } from "@codemirror/lint";
import { EditorState } from "@codemirror/state";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { basicSetup, EditorView } from "codemirror";
import { type ReactNode, useEffect, useId, useRef, useState } from "react";
import { api } from "../api/client";
import { ApiError, apiError, errorText, must } from "../api/errors";
import { orgPath } from "../org-frame";
import type { OrgPageProps } from "../org-routes";
import { Link, navigate } from "../router";
import {
  bodyOf,
  type FieldErrors,
  type FormValue,
  type JsonSchema,
  requestSchema,
  SchemaFields,
  validate,
} from "../schema-form";
import { ConfirmDialog, FormError, Status } from "../ui";
import { useAbilities } from "./credentials-common";
import { BackToProxy, ReadOnlyNote, useProxy } from "./meters";

type Kind = "request" | "response";
const KINDS: Kind[] = ["request", "response"];
const KIND_NAME: Record<Kind, string> = { request: "Request", response: "Response" };

interface Transform {
  sKey: string;
  transformMode: string;
  effect?: string | null;
  transformActive: boolean;
  priority?: number | null;
  notes?: string;
  code?: string;
  [field: string]: unknown;
}

const basePath = (kind: Kind) => `/api/clients/{clientId}/proxies/{proxyId}/${kind}-transforms`;
const itemPath = (kind: Kind) => `${basePath(kind)}/{transformId}`;
const wrapperOf = (kind: Kind) => (kind === "request" ? "requestTransforms" : "responseTransforms");

type Answer = { data?: unknown; error?: unknown; response: Response };
type Init = { params: { path: Record<string, string> }; body?: unknown };
/** The client on the transforms' paths, which differ by kind only (the answers are read by kind). */
const client = api as unknown as Record<
  "GET" | "POST" | "PUT" | "DELETE",
  (path: string, init: Init) => Promise<Answer>
>;

const items = (kind: Kind, data: unknown): Transform[] =>
  ((data as Record<string, unknown>)[wrapperOf(kind)] as Transform[] | undefined) ?? [];

const listKey = (clientId: string, proxyId: string, kind: Kind) =>
  ["transforms", clientId, proxyId, kind] as const;

const transformName = (kind: Kind, transform: Transform) =>
  `${KIND_NAME[kind]} transform ${transform.sKey.slice(0, 8)}`;

const isKind = (value: string | undefined): value is Kind => value === "request" || value === "response";

export function TransformsPage({ clientId, params, user }: OrgPageProps) {
  const proxyId = params.proxyId ?? "";
  const { write } = useAbilities(clientId, user.userId);
  const proxy = useProxy(clientId, proxyId);
  const name = proxy.data?.proxyName;
  return (
    <>
      <BackToProxy clientId={clientId} proxyId={proxyId} name={name} />
      <h1>Transforms{name ? ` of ${name}` : ""}</h1>
      <p>
        A transform is your own TypeScript or JavaScript code that reshapes traffic: a request transform runs
        before the request goes to the target, a response transform before the answer goes back. Of several
        matching transforms, the one with the highest priority runs. At most 20 of each kind per proxy.
      </p>
      {!write && <ReadOnlyNote />}
      {KINDS.map((kind) => (
        <TransformList key={kind} clientId={clientId} proxyId={proxyId} kind={kind} write={write} />
      ))}
    </>
  );
}

function TransformList({
  clientId,
  proxyId,
  kind,
  write,
}: {
  clientId: string;
  proxyId: string;
  kind: Kind;
  write: boolean;
}) {
  const queryClient = useQueryClient();
  const titleId = useId();
  const list = useQuery({
    queryKey: listKey(clientId, proxyId, kind),
    queryFn: async () =>
      items(kind, must(await client.GET(basePath(kind), { params: { path: { clientId, proxyId } } }))),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: listKey(clientId, proxyId, kind) });
  const toggle = useMutation({
    mutationFn: async (transform: Transform) =>
      must(
        await client.PUT(itemPath(kind), {
          params: { path: { clientId, proxyId, transformId: transform.sKey } },
          body: { transformActive: !transform.transformActive },
        }),
      ),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: async (transform: Transform) =>
      must(
        await client.DELETE(itemPath(kind), {
          params: { path: { clientId, proxyId, transformId: transform.sKey } },
        }),
      ),
    onSuccess: refresh,
  });
  const [deleting, setDeleting] = useState<Transform | null>(null);
  const newHref = orgPath(clientId, "proxies", proxyId, "transforms", kind, "new");
  return (
    <section aria-labelledby={titleId}>
      <h2 id={titleId}>{KIND_NAME[kind]} transforms</h2>
      {write && (
        <p>
          <Link href={newHref}>New {kind} transform</Link>
        </p>
      )}
      {list.isPending && <p>Loading…</p>}
      {list.isError && <p role="alert">Error: {errorText(list.error)}</p>}
      {toggle.isSuccess && (
        <Status>
          {transformName(kind, toggle.variables)} is now{" "}
          {toggle.variables.transformActive ? "inactive" : "active"}.
        </Status>
      )}
      {remove.isSuccess && <Status>{transformName(kind, remove.variables)} was deleted.</Status>}
      <FormError error={toggle.error ?? remove.error} />
      {list.data?.length === 0 && (
        <p>
          No {kind} transforms yet.{" "}
          {write ? (
            <>
              <Link href={newHref}>Write the first {kind} transform</Link>.
            </>
          ) : (
            "A member with the DevOps role or above can write one."
          )}
        </p>
      )}
      {list.data && list.data.length > 0 && (
        <ul aria-labelledby={titleId} className="rows">
          {list.data.map((transform) => {
            const label = transformName(kind, transform);
            return (
              <li key={transform.sKey}>
                <h3 className="row-title">{label}</h3>
                <p>
                  {transform.transformActive ? "Active" : "Inactive (does not run)"}; priority{" "}
                  {transform.priority ?? 0};{" "}
                  {transform.transformMode === "conditional"
                    ? `conditional (${transform.effect ?? "include"} the requests its conditions match)`
                    : "every request"}
                  .
                </p>
                {transform.notes ? <p className="hint">{transform.notes}</p> : null}
                <div className="inline-form">
                  <Link
                    href={orgPath(clientId, "proxies", proxyId, "transforms", kind, transform.sKey)}
                    aria-label={`${write ? "Edit" : "View"} ${label}`}
                  >
                    {write ? "Edit" : "View"}
                  </Link>
                  {write && (
                    <>
                      <button
                        type="button"
                        aria-label={`${transform.transformActive ? "Deactivate" : "Activate"} ${label}`}
                        disabled={toggle.isPending}
                        onClick={() => toggle.mutate(transform)}
                      >
                        {transform.transformActive ? "Deactivate" : "Activate"}
                      </button>
                      <button
                        type="button"
                        className="secondary"
                        aria-label={`Delete ${label}`}
                        onClick={() => setDeleting(transform)}
                      >
                        Delete
                      </button>
                    </>
                  )}
                </div>
              </li>
            );
          })}
        </ul>
      )}
      <ConfirmDialog
        open={deleting !== null}
        title={`Delete ${deleting ? transformName(kind, deleting) : "this transform"}?`}
        confirmLabel="Delete transform"
        onCancel={() => setDeleting(null)}
        onConfirm={() => {
          if (deleting) remove.mutate(deleting);
          setDeleting(null);
        }}
      >
        <p>
          The transform and its code go at once: from the next request on it no longer runs. This cannot be
          undone; copy the code first if you may want it again.
        </p>
      </ConfirmDialog>
    </section>
  );
}

// --- the editor ---

/** A problem the API found in the code, at its line (and column). */
interface CodeProblem {
  line: number;
  column: number;
  message: string;
}

const CODE_LABEL = "Code (TypeScript or JavaScript)";

const PROBLEM = /^Line (\d+)(?:, column (\d+))?: (.+)$/s;

/** The code problems of a refused save (`{message, errors}`, one "Line L, column C: ..." per problem). */
function codeProblems(body: unknown): CodeProblem[] {
  const errors =
    typeof body === "object" && body && "errors" in body && Array.isArray(body.errors) ? body.errors : [];
  return errors.flatMap((item) => {
    const match = typeof item === "string" ? PROBLEM.exec(item) : null;
    return match ? [{ line: Number(match[1]), column: Number(match[2] ?? 1), message: match[3] ?? "" }] : [];
  });
}

function diagnosticsOf(view: EditorView, problems: CodeProblem[]): Diagnostic[] {
  const doc = view.state.doc;
  return problems.map((problem) => {
    const line = doc.line(Math.min(Math.max(problem.line, 1), doc.lines));
    const from = line.from + Math.min(Math.max(problem.column - 1, 0), line.length);
    return { from, to: Math.max(from, line.to), severity: "error", message: problem.message };
  });
}

/** The editor's look: CodeMirror's styles live in its shadow root, so the page's stylesheet stays out. */
const EDITOR_THEME = EditorView.theme({
  "&": { border: "1px solid #666", borderRadius: "4px", fontSize: "0.9rem", backgroundColor: "#fff" },
  "&.cm-focused": { outline: "3px solid #0b57d0", outlineOffset: "1px" },
  // No scrolling region of its own (long lines wrap; the page scrolls): the content keeps the focus.
  ".cm-scroller": {
    minHeight: "10rem",
    fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
  },
});

/**
 * CodeMirror 6 in a shadow root: its styles are constructed style sheets there (the console's
 * Content-Security-Policy, `style-src 'self'`, refuses the `<style>` elements it would add to the
 * document). A label cannot point into a shadow root, so the editable content carries the label's
 * text as its accessible name.
 */
function CodeEditor({
  initial,
  onChange,
  problems,
  label,
  readOnly,
}: {
  initial: string;
  onChange: (code: string) => void;
  problems: CodeProblem[];
  label: string;
  readOnly: boolean;
}) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const change = useRef(onChange);
  change.current = onChange;
  // biome-ignore lint/correctness/useExhaustiveDependencies: the editor is created once; later values are its own
  useEffect(() => {
    const element = host.current;
    if (!element) return;
    const shadow = element.shadowRoot ?? element.attachShadow({ mode: "open" });
    const parent = document.createElement("div");
    shadow.replaceChildren(parent);
    const editor = new EditorView({
      doc: initial,
      parent,
      root: shadow,
      extensions: [
        basicSetup,
        javascript({ typescript: true }),
        lintGutter(),
        EDITOR_THEME,
        EditorView.lineWrapping,
        EditorState.readOnly.of(readOnly),
        EditorView.contentAttributes.of({ "aria-label": label }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) change.current(update.state.doc.toString());
        }),
      ],
    });
    view.current = editor;
    return () => {
      editor.destroy();
      view.current = null;
    };
  }, []);
  useEffect(() => {
    const editor = view.current;
    if (!editor) return;
    editor.dispatch(setDiagnostics(editor.state, diagnosticsOf(editor, problems)));
    // The editor's own list of its diagnostics (a listbox under the code) opens with them.
    if (problems.length > 0) openLintPanel(editor);
    else closeLintPanel(editor);
  }, [problems]);
  return <div ref={host} className="code-editor" />;
}

const LABELS: Record<string, string> = {
  transformMode: "Applies to",
  effect: "Effect of the conditions",
  transformActive: "Active",
  priority: "Priority",
  methods: "HTTP methods",
  path: "Path condition",
  query: "Query conditions",
  headers: "Header conditions",
  body: "Body conditions",
  token: "Token claim conditions",
  variables: "Variables",
  responseHeaders: "Response header conditions",
  responseBody: "Response body conditions",
  responseStatus: "Response status conditions",
  notes: "Notes",
};

const HINTS: Record<string, ReactNode> = {
  transformMode: "all: every request; conditional: only the requests the conditions below decide.",
  effect: "include: run for the requests matching every condition; exclude: for all the others.",
  priority: "0 to 1000; of several matching transforms the highest runs.",
  methods: "Such as GET or POST.",
};

const PREDICATES = ["methods", "path", "query", "headers", "body", "token", "variables"];
const RESPONSE_PREDICATES = ["responseHeaders", "responseBody", "responseStatus"];

const STARTER: Record<Kind, string> = {
  request: `// Runs before the request goes to the target; returns the request to send.
export default function (context: { requestId: string }, request: { headers: Record<string, string>; body: unknown }) {
  return { ...request, headers: { ...request.headers, "x-transformed": "yes" } };
}
`,
  response: `// Runs before the target's answer goes back to the caller; returns the answer to send.
export default function (context: { requestId: string }, request: unknown, response: { status: number; headers: Record<string, string>; body: unknown }) {
  return response;
}
`,
};

function TransformForm({
  kind,
  method,
  initial,
  submitLabel,
  onSave,
  readOnly = false,
}: {
  readOnly?: boolean;
  kind: Kind;
  method: "POST" | "PUT";
  initial: FormValue & { code?: string };
  submitLabel: string;
  onSave: (body: FormValue) => Promise<Answer>;
}) {
  const schema = requestSchema(method, method === "POST" ? basePath(kind) : itemPath(kind)) as JsonSchema;
  const [value, setValue] = useState<FormValue>(initial);
  const [code, setCode] = useState(String(initial.code ?? ""));
  const [problems, setProblems] = useState<CodeProblem[]>([]);
  const [clientErrors, setClientErrors] = useState<FieldErrors>({});
  const labelId = useId();
  const problemsId = useId();
  // What the API holds since the last save: a PUT sends the code only when it differs, and null
  // for an optional field cleared since.
  const saved = useRef<FormValue>(initial);
  const save = useMutation({
    mutationFn: async (body: FormValue) => {
      const result = await onSave(body);
      if (!result.response.ok) {
        setProblems(codeProblems(result.error));
        throw apiError(result.response, result.error);
      }
      setProblems([]);
      return result.data;
    },
    onSuccess: (_data, body) => {
      saved.current = { ...saved.current, ...body };
    },
  });
  const errors = {
    ...(save.error instanceof ApiError ? save.error.fields : {}),
    ...clientErrors,
  };
  const conditional = value.transformMode === "conditional";
  const common = {
    schema,
    value,
    onChange: setValue,
    errors,
    labels: LABELS,
    hints: HINTS,
    disabled: save.isPending || readOnly,
  };
  return (
    <form
      noValidate
      className="panel"
      aria-label={submitLabel}
      onSubmit={(event) => {
        event.preventDefault();
        const whole = { ...value, code };
        const found = validate(schema, whole);
        setClientErrors(found);
        if (Object.keys(found).length > 0) return;
        const body = bodyOf(schema, whole, saved.current);
        // The code is sent only when it changed (spec 4.10).
        if (method === "PUT" && code === saved.current.code) delete body.code;
        save.mutate(body);
      }}
    >
      <div className="field">
        <p id={labelId} className="label">
          {CODE_LABEL}
        </p>
        <p className="hint">
          A function as the default export; no imports, require, process, fetch, globalThis, eval or Function.
        </p>
        <CodeEditor
          initial={code}
          onChange={setCode}
          problems={problems}
          label={CODE_LABEL}
          readOnly={readOnly}
        />
        <div id={problemsId}>
          {clientErrors.code && <p className="field-error">Error: the code {clientErrors.code}.</p>}
          {problems.length > 0 && (
            <ul aria-label="Problems in the code" className="field-error">
              {problems.map((problem) => (
                <li key={`${problem.line}:${problem.column}:${problem.message}`}>
                  Line {problem.line}: {problem.message} (column {problem.column})
                </li>
              ))}
            </ul>
          )}
        </div>
      </div>
      <fieldset>
        <legend>When it runs</legend>
        <SchemaFields {...common} fields={["transformActive", "priority", "transformMode"]} />
        {conditional && (
          <SchemaFields
            {...common}
            fields={["effect", ...PREDICATES, ...(kind === "response" ? RESPONSE_PREDICATES : [])]}
          />
        )}
      </fieldset>
      <SchemaFields {...common} fields={["notes"]} />
      {problems.length > 0 ? (
        <p role="alert" className="error">
          Error: {errorText(save.error)}: {problems.length} problem{problems.length === 1 ? "" : "s"} in the
          code, shown at their lines.
        </p>
      ) : (
        <FormError error={save.error} fields={Object.keys(schema.properties ?? {})} />
      )}
      {Object.keys(clientErrors).length > 0 && (
        <p role="alert" className="error">
          Error: correct the fields marked above ({Object.keys(clientErrors).join(", ")}).
        </p>
      )}
      {save.isSuccess && method === "PUT" && (
        <Status>Transform saved. It applies from the next request.</Status>
      )}
      {!readOnly && (
        <button type="submit" disabled={save.isPending}>
          {submitLabel}
        </button>
      )}
    </form>
  );
}

export function TransformNewPage({ clientId, params }: OrgPageProps) {
  const proxyId = params.proxyId ?? "";
  const kind = params.kind;
  const proxy = useProxy(clientId, proxyId);
  const queryClient = useQueryClient();
  if (!isKind(kind)) return <h1>Page not found</h1>;
  return (
    <>
      <BackToProxy clientId={clientId} proxyId={proxyId} name={proxy.data?.proxyName} />
      <h1>New {kind} transform</h1>
      <p>
        <Link href={orgPath(clientId, "proxies", proxyId, "transforms")}>Back to the transforms</Link>
      </p>
      <TransformForm
        kind={kind}
        method="POST"
        initial={{ transformMode: "all", transformActive: true, priority: 0, code: STARTER[kind] }}
        submitLabel={`Create ${kind} transform`}
        onSave={async (body) => {
          const result = await client.POST(basePath(kind), { params: { path: { clientId, proxyId } }, body });
          if (result.response.ok) {
            await queryClient.invalidateQueries({ queryKey: listKey(clientId, proxyId, kind) });
            const created = items(kind, result.data)[0];
            navigate(
              created
                ? orgPath(clientId, "proxies", proxyId, "transforms", kind, created.sKey)
                : orgPath(clientId, "proxies", proxyId, "transforms"),
            );
          }
          return result;
        }}
      />
    </>
  );
}

/** The stored transform as form values: the fields a PUT takes. */
function editable(transform: Transform, schema: JsonSchema): FormValue {
  const value: FormValue = {};
  for (const name of Object.keys(schema.properties ?? {}))
    if (transform[name] !== undefined && transform[name] !== null) value[name] = transform[name];
  return value;
}

export function TransformEditPage({ clientId, params, user }: OrgPageProps) {
  const { write } = useAbilities(clientId, user.userId);
  const proxyId = params.proxyId ?? "";
  const transformId = params.transformId ?? "";
  const kind = isKind(params.kind) ? params.kind : "request";
  const proxy = useProxy(clientId, proxyId);
  const queryClient = useQueryClient();
  const key = ["transform", clientId, proxyId, kind, transformId];
  const transform = useQuery({
    queryKey: key,
    enabled: isKind(params.kind),
    queryFn: async () =>
      items(
        kind,
        must(await client.GET(itemPath(kind), { params: { path: { clientId, proxyId, transformId } } })),
      )[0],
  });
  const back = (
    <p>
      <Link href={orgPath(clientId, "proxies", proxyId, "transforms")}>Back to the transforms</Link>
    </p>
  );
  if (!isKind(params.kind)) return <h1>Page not found</h1>;
  if (transform.isPending) return <p>Loading…</p>;
  if (transform.isError || !transform.data)
    return (
      <>
        <h1>Transform not found</h1>
        {transform.isError && <p role="alert">Error: {errorText(transform.error)}</p>}
        {back}
      </>
    );
  const schema = requestSchema("PUT", itemPath(kind)) as JsonSchema;
  return (
    <>
      <BackToProxy clientId={clientId} proxyId={proxyId} name={proxy.data?.proxyName} />
      <h1>
        {write ? "Edit" : "Transform:"} {transformName(kind, transform.data)}
      </h1>
      {!write && <ReadOnlyNote />}
      {back}
      <TransformForm
        kind={kind}
        method="PUT"
        initial={editable(transform.data, schema)}
        submitLabel={`Save ${kind} transform`}
        readOnly={!write}
        // The editor is made once: a member's roles that arrive later make it again, read-only.
        key={String(write)}
        onSave={async (body) => {
          const result = await client.PUT(itemPath(kind), {
            params: { path: { clientId, proxyId, transformId } },
            body,
          });
          if (result.response.ok) {
            void queryClient.invalidateQueries({ queryKey: listKey(clientId, proxyId, kind) });
          }
          return result;
        }}
      />
    </>
  );
}
