// The console's one way to call the API: the bearer token in the Authorization header (never in a
// URL), the REST envelope unwrapped, and every failure an ApiError carrying the status, the vendor
// code and the server's message. A 401 also tells the page to return to sign-in.
const PERMISSION = /needs ([a-z]+:[a-z]+)/;

export class ApiError extends Error {
  constructor(readonly status: number, readonly code: number, message: string, readonly retryAfter?: string) {
    super(message);
  }

  /** The permission a 403 names ("permission denied: this operation needs statistics:read"). */
  get permission(): string | undefined {
    return this.status === 403 ? PERMISSION.exec(this.message)?.[1] : undefined;
  }
}

type Query = Record<string, string | number | undefined>;

interface Envelope<T> {
  code: number;
  message: string;
  data: T;
}

export class Api {
  constructor(
    private readonly token: () => string | undefined,
    private readonly onUnauthorized: (error: ApiError) => void,
  ) {}

  get<T>(path: string, query: Query, signal?: AbortSignal): Promise<T> {
    return this.json<T>("GET", path + queryString(query), undefined, signal);
  }

  post<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return this.json<T>("POST", path, body, signal);
  }

  /** The token exchange: the one call made without a token. */
  async exchange(appId: string, appSecret: string): Promise<{ access_token: string; expire: number }> {
    const response = await this.send("POST", "/openapi/v1/auth/token", { app_id: appId, app_secret: appSecret }, undefined, false);
    return unwrap(response);
  }

  /** A file download (the usage export): the body as a Blob and the name the server gives it. */
  async download(path: string, query: Query, signal?: AbortSignal): Promise<{ blob: Blob; fileName: string }> {
    const response = await this.send("GET", path + queryString(query), undefined, signal);
    if (!response.ok) await unwrap(response);
    const disposition = response.headers.get("content-disposition") ?? "";
    const fileName = /filename="([^"]+)"/.exec(disposition)?.[1] ?? "usage-export.csv";
    try {
      return { blob: await response.blob(), fileName };
    } catch (error) {
      if (signal?.aborted) throw error;
      // A body that stops early is never a whole file: the server cut it at its deadline, or the connection failed.
      throw new ApiError(0, 0, "The export stopped before its end, and nothing was saved: it took longer than the server allows a call " +
        "(REQUEST_TIMEOUT_MS, 60 s by default), or the connection failed. Export fewer days at a time, or run `enterprise-admin export usage`, which has no time limit");
    }
  }

  private async json<T>(method: string, path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return unwrap<T>(await this.send(method, path, body, signal));
  }

  private async send(method: string, path: string, body: unknown, signal?: AbortSignal, authenticated = true): Promise<Response> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (authenticated) {
      const token = this.token();
      if (!token) throw this.unauthorized(new ApiError(401, 1002, "no access token in this tab"));
      headers.authorization = `Bearer ${token}`;
    }
    let response: Response;
    try {
      response = await fetch(path, {
        method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body),
        credentials: "omit", cache: "no-store", referrerPolicy: "no-referrer",
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new ApiError(0, 0, `the server did not answer (${(error as Error).message})`);
    }
    if (response.status === 401 && authenticated) {
      const error = await errorOf(response);
      throw this.unauthorized(error);
    }
    return response;
  }

  private unauthorized(error: ApiError): ApiError {
    this.onUnauthorized(error);
    return error;
  }
}

async function unwrap<T>(response: Response): Promise<T> {
  if (!response.ok) throw await errorOf(response);
  const envelope = parseExact(await response.text()) as Envelope<T>;
  return envelope.data;
}

async function errorOf(response: Response): Promise<ApiError> {
  const text = await response.text();
  let code = 0;
  let message = text.trim() || response.statusText;
  try {
    const envelope = JSON.parse(text) as Envelope<null>;
    code = envelope.code;
    message = envelope.message;
  } catch {
    // not the JSON envelope (a proxy's page, say): keep the text
  }
  return new ApiError(response.status, code, message, response.headers.get("retry-after") ?? undefined);
}

/**
 * JSON.parse that keeps an integer past 2^53 as its digits (a string) instead of rounding it, where
 * the browser gives revivers the source text (Chromium, Firefox, Safari since 2023).
 */
function parseExact(text: string): unknown {
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) =>
    typeof value === "number" && !Number.isSafeInteger(value) && context?.source && /^-?\d+$/.test(context.source) ? context.source : value);
}

function queryString(query: Query): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== "") params.set(name, String(value));
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}
