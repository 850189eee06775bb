import { describe, expect, it } from 'vitest';
import { ApiError, errorFromBody, parseErrorResponse, toApiError } from './error';

describe('error parsing', () => {
  it('reads the documented shape', () => {
    const e = parseErrorResponse(409, '{"error":{"code":"invalid_transition","message":"task is done; it cannot be stopped"}}');
    expect(e).toBeInstanceOf(ApiError);
    expect(e.code).toBe('invalid_transition');
    expect(e.message).toBe('task is done; it cannot be stopped');
    expect(e.status).toBe(409);
    expect(e.unauthorized).toBe(false);
  });

  it('knows a 401 whatever the body', () => {
    expect(parseErrorResponse(401, '<html>sign in</html>').unauthorized).toBe(true);
    expect(parseErrorResponse(401, '{"error":{"code":"unauthorized","message":"no token"}}').unauthorized).toBe(true);
  });

  it('falls back to a sentence from the status', () => {
    const e = parseErrorResponse(502, 'Bad Gateway');
    expect(e.code).toBe('unknown');
    expect(e.message).toMatch(/HTTP 502/);
    expect(parseErrorResponse(404, '').message).toBe('That task no longer exists.');
  });

  it('rejects other shapes', () => {
    expect(errorFromBody('{"error":"x"}')).toBeNull();
    expect(errorFromBody('{"error":{"message":"no code"}}')).toBeNull();
    expect(errorFromBody('not json')).toBeNull();
    expect(errorFromBody(null)).toBeNull();
  });

  it('reads what a Wails binding rejects with', () => {
    const fromString = toApiError('{"error":{"code":"not_found","message":"no task abc"}}');
    expect(fromString.code).toBe('not_found');
    const fromError = toApiError(new Error('{"error":{"code":"invalid","message":"text is empty"}}'));
    expect(fromError.code).toBe('invalid');
    expect(fromError.message).toBe('text is empty');
    const plain = toApiError(new Error('boom'));
    expect(plain.code).toBe('unknown');
    expect(plain.message).toBe('boom');
  });
});
