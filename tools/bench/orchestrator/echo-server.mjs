#!/usr/bin/env node
// The raw baseline of the orchestrator benchmark: a bare `ws` server on 127.0.0.1 (port 0) that echoes every text
// message back, with the same `ws` options as the orchestrator's gateway (no permessage-deflate). Prints
// `listening on ws://127.0.0.1:<port>` when ready.
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';

const server = createServer((_req, res) => {
  res.writeHead(404);
  res.end();
});
const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 1024 * 1024 });
server.on('upgrade', (req, socket, head) => {
  wss.handleUpgrade(req, socket, head, (ws) => {
    ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
    ws.on('error', () => {});
  });
});
server.listen(0, '127.0.0.1', () => {
  console.log(`listening on ws://127.0.0.1:${server.address().port}`);
});
process.on('SIGTERM', () => process.exit(0));
