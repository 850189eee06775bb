import { ErrorCode } from './contract';

/** ApiError is how every Backend method fails: the gateway's code and message, and the HTTP status when there was one. */
export class ApiError extends Error {
  readonly code: string;
  readonly status: number;

  constructor(code: string, message: string, status = 0) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = status;
  }

  /** True when the caller has no valid sign-in; the app then shows the sign-in panel. */
  get unauthorized(): boolean {
    return this.status === 401 || this.code === ErrorCode.Unauthorized;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

/** Reads `{"error": {code, message}}`; anything else returns null. */
export function errorFromBody(body: unknown, status = 0): ApiError | null {
  let v = body;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v) as unknown;
    } catch {
      return null;
    }
  }
  if (!isRecord(v) || !isRecord(v.error)) return null;
  const { code, message } = v.error;
  if (typeof code !== 'string' || code === '') return null;
  return new ApiError(code, typeof message === 'string' && message !== '' ? message : fallbackMessage(status), status);
}

/**
 * Turns an HTTP error answer into an ApiError: the documented JSON shape when
 * present, else a sentence from the status alone.
 */
export function parseErrorResponse(status: number, text: string): ApiError {
  return errorFromBody(text, status) ?? new ApiError(status === 401 ? ErrorCode.Unauthorized : ErrorCode.Unknown, fallbackMessage(status), status);
}

/** Turns whatever a Wails binding rejected with (a JSON string, an Error, anything) into an ApiError. */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  const parsed = errorFromBody(e) ?? (e instanceof Error ? errorFromBody(e.message) : null);
  if (parsed) return parsed;
  const msg = e instanceof Error ? e.message : typeof e === 'string' ? e : '';
  return new ApiError(ErrorCode.Unknown, msg !== '' ? msg : 'Something went wrong; try again.');
}

/** The error for a request that never got an answer. */
export function networkError(): ApiError {
  return new ApiError(ErrorCode.Network, "Can't reach Conch; check that `conch serve` is still running.");
}

function fallbackMessage(status: number): string {
  switch (status) {
    case 401:
      return 'Sign in by opening the link that `conch serve` printed.';
    case 403:
      return 'Conch refused this page; open it through the link that `conch serve` printed.';
    case 404:
      return 'That task no longer exists.';
    case 409:
      return "The task's state changed before this reached it; look again and retry.";
    case 413:
      return 'That is too large to send (over 1 MiB).';
    default:
      return status >= 500 ? `Conch had an internal error (HTTP ${status}); try again.` : `The request failed (HTTP ${status}).`;
  }
}
