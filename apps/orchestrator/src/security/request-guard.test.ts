import { describe, expect, it } from 'vitest';
import {
  checkContentType,
  checkHost,
  checkOrigin,
  guardHttp,
  guardUpgrade,
  type GuardPolicy,
} from './request-guard.js';

const policy: GuardPolicy = {
  allowedHosts: ['cc.example.net'],
  allowedOrigins: ['https://dash.example'],
  scheme: 'http',
};

describe('request guard', () => {
  it('accepts IP literals, localhost and configured names in Host, refuses other names (guards against DNS rebinding)', () => {
    for (const host of [
      '127.0.0.1:7420',
      '[::1]:7420',
      '10.1.2.3',
      'localhost:7420',
      'app.localhost',
      'CC.Example.NET:80',
    ]) {
      expect(checkHost({ host }, policy).ok, host).toBe(true);
    }
    for (const host of ['rebind.evil.example:7420', 'cc.example.net.evil.example', 'example.net', '']) {
      expect(checkHost({ host }, policy), host).toMatchObject({
        ok: false,
        status: 421,
        code: 'forbidden_host',
      });
    }
    expect(checkHost({ host: 'anything.example' }, { ...policy, allowedHosts: ['*'] }).ok).toBe(true);
  });

  it("accepts no Origin (CC:Tweaked, CLI), the server's own and allow-listed origins; refuses others and null (guards against cross-site requests)", () => {
    expect(checkOrigin({ host: '127.0.0.1:7420' }, policy).ok).toBe(true);
    expect(checkOrigin({ host: '127.0.0.1:7420', origin: 'http://127.0.0.1:7420' }, policy).ok).toBe(true);
    expect(checkOrigin({ host: 'localhost', origin: 'http://localhost:80' }, policy).ok).toBe(true);
    expect(checkOrigin({ host: 'x:1', origin: 'https://dash.example' }, policy).ok).toBe(true);
    for (const origin of [
      'http://evil.example',
      'null',
      'https://127.0.0.1:7420',
      'http://127.0.0.1:7421',
      'file://',
    ]) {
      expect(checkOrigin({ host: '127.0.0.1:7420', origin }, policy), origin).toMatchObject({
        ok: false,
        status: 403,
        code: 'forbidden_origin',
      });
    }
    // Same host under TLS: the scheme must match the server's.
    expect(checkOrigin({ host: 'h:1', origin: 'https://h:1' }, { ...policy, scheme: 'https' }).ok).toBe(true);
    expect(checkOrigin({ host: 'h:1', 'sec-fetch-site': 'cross-site' }, policy).ok).toBe(false);
    // Behind a TLS proxy: the browser's https origin is this server's own.
    expect(
      checkOrigin(
        { host: 'cc.example.net', origin: 'https://cc.example.net', 'x-forwarded-proto': 'https' },
        policy,
      ).ok,
    ).toBe(true);
    expect(
      checkOrigin(
        { host: 'cc.example.net', origin: 'https://evil.example', 'x-forwarded-proto': 'https' },
        policy,
      ).ok,
    ).toBe(false);
  });

  it('requires application/json on state-changing methods only (forms and text/plain are simple cross-site requests)', () => {
    expect(checkContentType('GET', {}).ok).toBe(true);
    expect(checkContentType('POST', { 'content-type': 'application/json; charset=utf-8' }).ok).toBe(true);
    for (const t of [
      undefined,
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
    ]) {
      expect(checkContentType('POST', t ? { 'content-type': t } : {}), String(t)).toMatchObject({
        ok: false,
        status: 415,
      });
    }
  });

  it('guardHttp and guardUpgrade combine the checks in order', () => {
    expect(guardHttp('POST', { host: 'evil.example', origin: 'http://evil.example' }, policy)).toMatchObject({
      status: 421,
    });
    expect(guardHttp('POST', { host: '127.0.0.1', origin: 'http://evil.example' }, policy)).toMatchObject({
      status: 403,
    });
    expect(guardHttp('POST', { host: '127.0.0.1', 'content-type': 'text/plain' }, policy)).toMatchObject({
      status: 415,
    });
    expect(guardHttp('GET', { host: '127.0.0.1', origin: 'http://evil.example' }, policy).ok).toBe(true);
    expect(guardUpgrade({ host: '127.0.0.1:1', origin: 'http://evil.example' }, policy)).toMatchObject({
      status: 403,
    });
    expect(guardUpgrade({ host: '127.0.0.1:1' }, policy).ok).toBe(true);
  });
});
