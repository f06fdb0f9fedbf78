import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as api from './index.js';

describe('@ccagent/protocol', () => {
  it('reports the version published in package.json (guards against a stale VERSION after a release bump)', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(api.VERSION).toBe(pkg.version);
  });

  it('exports exactly the deliberate public surface (an accidental export becomes a published API)', () => {
    const schemas = [
      'AskUserSchema',
      'CancelTaskSchema',
      'ChunkSchema',
      'ClientMessageSchema',
      'CommandAckSchema',
      'CommandCallSchema',
      'CommandCancelSchema',
      'CompletionSettingsSchema',
      'CommandErrorSchema',
      'CommandResultSchema',
      'CommandSpecSchema',
      'CreateTaskSchema',
      'ErrorMessageSchema',
      'HelloSchema',
      'PingSchema',
      'PongSchema',
      'ServerMessageSchema',
      'SubscribeSchema',
      'TaskBudgetSettingsSchema',
      'TaskCompletedSchema',
      'TaskCreatedSchema',
      'TaskEventSchema',
      'TaskFailedSchema',
      'TaskMessageSchema',
      'TaskSettingsSchema',
      'TaskStatusSchema',
      'TaskUpdateSchema',
      'ToolInfoSchema',
      'ToolStatusSchema',
      'ToolsUpdateSchema',
      'UnsubscribeSchema',
      'UserAnswerSchema',
      'WelcomeSchema',
    ];
    const rest = [
      'CLIENT_MESSAGE_TYPES',
      'ChunkAssembler',
      'DEFAULT_MAX_DEPTH',
      'DEFAULT_MAX_MESSAGE_BYTES',
      'ERROR_CODES',
      'ERROR_CODE_DESCRIPTIONS',
      'FrameDecoder',
      'MAX_REASSEMBLED_BYTES',
      'MESSAGE_CATALOG',
      'PROTOCOL_VERSION',
      'ProtocolError',
      'SERVER_MESSAGE_TYPES',
      'TASK_STATUSES',
      'TOOL_STATUSES',
      'VERSION',
      'encodeFrames',
      'messageJsonSchema',
      'parseClientMessage',
      'parseServerMessage',
      'protocolJsonSchema',
      'renderProtocolDoc',
      'serializeMessage',
      'splitIntoChunks',
      'toErrorMessage',
      'utf8ByteLength',
    ];
    const http = [
      'AnswerBodySchema',
      'CancelBodySchema',
      'ClientsResponseSchema',
      'CreateTaskBodySchema',
      'CreateTaskResponseSchema',
      'DashboardFeaturesResponseSchema',
      'HTTP_DOC_BEGIN',
      'HTTP_DOC_END',
      'HTTP_RECORDS',
      'HTTP_ROUTES',
      'HealthResponseSchema',
      'HttpClientSchema',
      'HttpCommandCallSchema',
      'HttpCommandSchema',
      'HttpErrorBodySchema',
      'HttpErrorInfoSchema',
      'HttpHistoryEntrySchema',
      'HttpQuestionSchema',
      'HttpStepSchema',
      'HttpTaskSchema',
      'HttpToolSchema',
      'LuaManifestResponseSchema',
      'STEP_PAGE_DEFAULT',
      'STEP_PAGE_MAX',
      'StepsQuerySchema',
      'TaskDetailResponseSchema',
      'TaskListQuerySchema',
      'TaskListResponseSchema',
      'TaskResponseSchema',
      'TaskStepsResponseSchema',
      'ToolsQuerySchema',
      'ToolsResponseSchema',
      'RetryBodySchema',
      'HttpPairingSchema',
      'PairCollectBodySchema',
      'PairCollectPendingSchema',
      'PairingDecisionResponseSchema',
      'PairRequestBodySchema',
      'PairRequestResponseSchema',
      'PairingApproveBodySchema',
      'PairingDenyBodySchema',
      'PairingsResponseSchema',
      'TaskEventBodySchema',
      'TaskMessageBodySchema',
      'HttpMinecraftInstanceSchema',
      'MINECRAFT_PLAN_MODES',
      'MinecraftEmptyBodySchema',
      'MinecraftInstancesResponseSchema',
      'MinecraftStopResponseSchema',
      'MinecraftTaskBodySchema',
      'MinecraftTaskResponseSchema',
      'renderHttpApiReference',
      'withHttpApiReference',
    ];
    const events = [
      'HTTP_EVENTS',
      'HTTP_EVENT_SCHEMAS',
      'HTTP_EVENT_TYPES',
      'HttpCallEventSchema',
      'HttpClientEventSchema',
      'HttpDeltaEventSchema',
      'HttpHelloEventSchema',
      'HttpQuestionEventSchema',
      'HttpResyncEventSchema',
      'HttpStepEventSchema',
      'HttpTaskEventSchema',
      'HttpToolEventSchema',
      'parseHttpEvent',
    ];
    const security = [
      'AuditQuerySchema',
      'AuditResponseSchema',
      'CreateKeyBodySchema',
      'CreateKeyResponseSchema',
      'CredentialsResponseSchema',
      'EnrollBodySchema',
      'EnrollResponseSchema',
      'HttpAuditEntrySchema',
      'HttpCredentialSchema',
      'PairBodySchema',
      'PairResponseSchema',
      'RevokeBodySchema',
      'RevokeResponseSchema',
      'RotateBodySchema',
      'RotateResponseSchema',
    ];
    expect(Object.keys(api).sort()).toEqual([...schemas, ...rest, ...http, ...events, ...security].sort());
  });

  it('counts UTF-8 bytes like Buffer.byteLength, lone surrogates as 3 (what TextEncoder sends)', () => {
    for (const s of ['', 'abc', 'é', '漢', '😀', 'a\ud800', '\udc00b', 'x'.repeat(1000) + '😀']) {
      expect(api.utf8ByteLength(s)).toBe(Buffer.byteLength(s, 'utf8'));
    }
    // The early stop keeps oversize checks cheap but still reports "more than the limit".
    expect(api.utf8ByteLength('x'.repeat(1_000_000), 10)).toBeGreaterThan(10);
  });
});
