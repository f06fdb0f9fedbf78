/** Entry: the app shell (header, navigation, live indicator), the router and the pages. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { getToken, onAuthNeeded, setToken } from './api.js';
import { live, type LiveState } from './events.js';
import { Login } from './login.js';
import { ChatPage } from './pages/chat.js';
import { ComputerScreenPage } from './screen.js';
import { ComputersPage } from './pages/computers.js';
import { KindsPage } from './pages/kinds.js';
import { MinecraftPage } from './pages/minecraft.js';
import { McInstancePage } from './pages/minecraft-instance.js';
import { NewTaskPage } from './pages/new-task.js';
import { SchedulesPage } from './pages/schedules.js';
import { TaskPage } from './pages/task.js';
import { TasksPage } from './pages/tasks.js';
import { useRoute } from './router.js';
import './styles.css';

function useNow(ms: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

const STATE_TEXT: Record<LiveState, string> = {
  connecting: 'connecting…',
  live: 'live',
  reconnecting: 'reconnecting…',
  unauthorized: 'token needed',
};

function App() {
  const path = useRoute();
  const now = useNow(10_000);
  const [state, setState] = useState<LiveState>(live.state);
  const [needLogin, setNeedLogin] = useState(false);
  const [session, setSession] = useState(0);

  useEffect(() => {
    const offA = onAuthNeeded(() => setNeedLogin(true));
    const offS = live.onState((s) => {
      setState(s);
      if (s === 'unauthorized') setNeedLogin(true);
    });
    live.start();
    return () => {
      offA();
      offS();
      live.stop();
    };
  }, []);

  useEffect(() => {
    document.getElementById('main')?.focus({ preventScroll: true });
  }, [path]);

  let page;
  const m = /^\/tasks\/([^/]+)(\/timeline)?$/.exec(path);
  if (needLogin) {
    page = (
      <Login
        onDone={() => {
          setNeedLogin(false);
          setSession((s) => s + 1);
          live.start();
        }}
      />
    );
  } else if (m)
    page = (
      <TaskPage
        id={decodeURIComponent(m[1]!)}
        now={now}
        view={m[2] !== undefined ? 'timeline' : 'conversation'}
      />
    );
  else if (path === '/chat' || path.startsWith('/chat/')) {
    const chatId = /^\/chat\/([^/]+)$/.exec(path)?.[1];
    page = <ChatPage id={chatId !== undefined ? decodeURIComponent(chatId) : undefined} />;
  } else if (path === '/new') page = <NewTaskPage />;
  else if (path === '/computers') page = <ComputersPage now={now} />;
  else if (/^\/computers\/[^/]+$/.test(path))
    page = <ComputerScreenPage clientId={decodeURIComponent(path.slice('/computers/'.length))} now={now} />;
  else if (path === '/minecraft') page = <MinecraftPage now={now} />;
  else if (path === '/schedules') page = <SchedulesPage now={now} />;
  else if (path === '/kinds') page = <KindsPage />;
  else if (path.startsWith('/minecraft/'))
    page = <McInstancePage id={decodeURIComponent(path.slice('/minecraft/'.length))} />;
  else page = <TasksPage now={now} />;

  const here = (p: string): 'page' | undefined =>
    path === p || ((p === '/tasks' || p === '/computers' || p === '/minecraft') && path.startsWith(`${p}/`))
      ? 'page'
      : undefined;
  return (
    <>
      <a
        class="skip"
        href="#main"
        onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}
      >
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="#/tasks">
          ccagent
        </a>
        <nav aria-label="Main">
          <a href="#/tasks" aria-current={here('/tasks')}>
            Tasks
          </a>
          <a href="#/chat" aria-current={path.startsWith('/chat') ? 'page' : undefined}>
            Chat
          </a>
          <a href="#/new" aria-current={here('/new')}>
            New task
          </a>
          <a href="#/computers" aria-current={here('/computers')}>
            Computers
          </a>
          <a href="#/minecraft" aria-current={path.startsWith('/minecraft') ? 'page' : undefined}>
            Minecraft
          </a>
          <a href="#/schedules" aria-current={here('/schedules')}>
            Schedules
          </a>
          <a href="#/kinds" aria-current={here('/kinds')}>
            Kinds
          </a>
        </nav>
        <span class={`live ${state}`} role="status" aria-live="polite" data-testid="live-state">
          {STATE_TEXT[state]}
        </span>
        {getToken() !== undefined && (
          <button
            type="button"
            class="small"
            onClick={() => {
              setToken('', false);
              setNeedLogin(true);
              live.stop();
            }}
          >
            Sign out
          </button>
        )}
      </header>
      <main id="main" tabIndex={-1} key={session}>
        {page}
      </main>
    </>
  );
}

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(<App />, root);
}
