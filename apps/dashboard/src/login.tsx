/** The token field: shown when the server answers 401. The token goes to request headers only, never into a URL. */
import { useState } from 'preact/hooks';
import { getToken, setToken } from './api.js';

/** Login form. `onDone` runs after a token is stored. */
export function Login({ onDone }: { onDone: () => void }) {
  const [token, setTokenText] = useState(getToken() ?? '');
  const [remember, setRemember] = useState(false);
  return (
    <form
      class="login"
      aria-labelledby="login-h"
      onSubmit={(e) => {
        e.preventDefault();
        setToken(token.trim(), remember);
        onDone();
      }}
    >
      <h1 id="login-h">This orchestrator needs a token</h1>
      <p class="muted">
        The one it was started with (<code>--token</code> or <code>CCAGENT_TOKEN</code>). It is sent in the
        Authorization header of each request.
      </p>
      <label>
        Token
        <input
          type="password"
          name="token"
          autoComplete="current-password"
          value={token}
          onInput={(e) => setTokenText(e.currentTarget.value)}
          required
        />
      </label>
      <label class="check">
        <input type="checkbox" checked={remember} onChange={(e) => setRemember(e.currentTarget.checked)} />
        Remember on this browser
      </label>
      <button type="submit" class="primary">
        Sign in
      </button>
    </form>
  );
}
