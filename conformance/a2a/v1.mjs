// The current @a2a-js/sdk (A2A protocol 1.0), with its default options:
// the card, send, get, stream, list, cancel, and one key's task hidden
// from another key.
import { ClientFactory } from '@a2a-js/sdk/client';
import { Role, TaskState } from '@a2a-js/sdk';
import { env, check, assert, rejects, bearer, newID, done } from './lib.mjs';

const url = env('H4R_URL');
const key = bearer(env('H4R_KEY'));
const other = bearer(env('H4R_KEY2'));

function textMessage(text) {
  return { message: { messageId: newID(), role: Role.ROLE_USER, parts: [{ content: { $case: 'text', value: text } }] } };
}

// listRequest fills in ListTasksRequest's required fields, as the SDK's
// type has them (a missing status is sent as UNRECOGNIZED).
function listRequest(fields) {
  return { tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', ...fields };
}

function packOf(task) {
  assert(task.status?.state === TaskState.TASK_STATE_COMPLETED, `task state ${task.status?.state}, want completed`);
  const art = task.artifacts?.[0];
  assert(art?.name === 'context_pack', `artifact ${JSON.stringify(art?.name)}, want context_pack`);
  const part = art.parts?.[0]?.content;
  assert(part?.$case === 'data', `artifact part ${part?.$case}, want data`);
  assert(Array.isArray(part.value.results), 'the pack has no results array');
  return part.value;
}

const client = await new ClientFactory().createFromUrl(url);
let task;

await check('1.0 card: streaming, bearer, a 1.0 JSON-RPC interface', async () => {
  const card = client.agentCard;
  assert(card.capabilities?.streaming === true, 'capabilities.streaming is not true');
  assert(card.supportedInterfaces.some((i) => i.protocolVersion === '1.0' && i.protocolBinding === 'JSONRPC'), 'no 1.0 JSONRPC interface');
  assert(card.securitySchemes?.bearer?.scheme?.$case === 'httpAuthSecurityScheme', `security scheme ${JSON.stringify(card.securitySchemes)}`);
  assert(client.protocolVersion === '1.0', `the client speaks ${client.protocolVersion}`);
});

await check('SendMessage answers a completed task with the pack', async () => {
  task = await client.sendMessage(textMessage('login selector test failures'), key);
  assert(task.id, `no task: ${JSON.stringify(task)}`);
  packOf(task);
});

await check('SendMessage without a key is refused', async () => {
  let failed = false;
  try { await client.sendMessage(textMessage('login')); } catch { failed = true; }
  assert(failed, 'sent without a key');
});

await check('GetTask returns the task', async () => {
  const got = await client.getTask({ id: task.id }, key);
  assert(got.id === task.id, `got ${got.id}`);
  packOf(got);
});

await check('SendStreamingMessage streams the task, its artifact and its final status', async () => {
  const kinds = [];
  let pack;
  for await (const ev of client.sendMessageStream(textMessage('checkout intermittently'), key)) {
    kinds.push(ev.payload?.$case ?? ev.kind ?? Object.keys(ev)[0]);
    if (ev.payload?.$case === 'artifactUpdate') pack = ev.payload.value.artifact.parts[0].content.value;
    if (ev.payload?.$case === 'statusUpdate') assert(ev.payload.value.status.state === TaskState.TASK_STATE_COMPLETED, `final state ${ev.payload.value.status.state}`);
  }
  assert(kinds.join(',') === 'task,artifactUpdate,statusUpdate', `events ${kinds}`);
  assert(Array.isArray(pack?.results), 'the streamed artifact holds no pack');
});

await check('ListTasks lists the key\'s tasks', async () => {
  const res = await client.listTasks(listRequest({ pageSize: 10 }), key);
  assert(res.tasks.some((t) => t.id === task.id), `task ${task.id} not listed`);
});

await check('CancelTask of an ended task: not cancelable (-32002)', async () => {
  await rejects(client.cancelTask({ id: task.id }, key), -32002, 'cancel');
});

await check('another key: GetTask is not found (-32001)', async () => {
  await rejects(client.getTask({ id: task.id }, other), -32001, 'get by another key');
});

await check('another key: CancelTask is not found (-32001)', async () => {
  await rejects(client.cancelTask({ id: task.id }, other), -32001, 'cancel by another key');
});

await check('another key: ListTasks does not list it', async () => {
  const res = await client.listTasks(listRequest({}), other);
  assert(!res.tasks.some((t) => t.id === task.id), 'listed to another key');
});

await check('an unknown task is not found (-32001)', async () => {
  await rejects(client.getTask({ id: newID() }, key), -32001, 'get unknown');
});

done('@a2a-js/sdk 1.x (A2A 1.0)');
