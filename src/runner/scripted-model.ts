/**
 * A model that plays a script: for tests and demos, where a real model's choices would make a run
 * unrepeatable.
 */
import { describe } from '../names.js';
import type { Model, ModelRequest, ModelResponse } from './types.js';

/** One scripted turn: a response, or a function of the request (to react to results or repeat a call). */
export type ScriptTurn = ModelResponse | ((request: ModelRequest) => ModelResponse | Promise<ModelResponse>);

/** Options of {@link ScriptedModel}. */
export interface ScriptedModelOptions {
  /** What happens after the last turn: answer with empty text, or repeat the last turn (a looping model). @default 'finish' */
  readonly whenDone?: 'finish' | 'repeat';
}

/**
 * Plays a script, one turn per model request. The turn is chosen from the conversation (the number of
 * assistant messages so far), not from a counter, so a run resumed in a fresh runner with a fresh model
 * continues where it paused. Calls without an id get `call_<turn>_<index>`.
 *
 * @example
 * const model = new ScriptedModel({
 *   concierge: [{ toolCalls: [{ name: 'search', arguments: { query: 'lamps' } }] }, { text: 'Found 3 lamps.' }],
 * });
 */
export class ScriptedModel implements Model {
  /** Every request received, in order (what the model was shown). */
  readonly requests: ModelRequest[] = [];
  readonly #script: readonly ScriptTurn[] | Readonly<Record<string, readonly ScriptTurn[]>>;
  readonly #whenDone: 'finish' | 'repeat';
  // The runner hands over its append-only transcript, so assistant messages are counted from where the
  // last count stopped: a long run costs the model linear time, not quadratic.
  readonly #counted = new WeakMap<readonly unknown[], { length: number; turns: number }>();

  /** `script`: one list of turns for every agent, or a list per agent name. */
  constructor(
    script: readonly ScriptTurn[] | Readonly<Record<string, readonly ScriptTurn[]>>,
    options: ScriptedModelOptions = {},
  ) {
    if (typeof script !== 'object' || script === null)
      throw new TypeError(
        `ScriptedModel expects a list of turns or a record of lists by agent, got ${describe(script)}`,
      );
    const whenDone = options.whenDone ?? 'finish';
    if (whenDone !== 'finish' && whenDone !== 'repeat')
      throw new TypeError(`ScriptedModel option "whenDone" must be 'finish' or 'repeat', got ${describe(whenDone)}`);
    this.#script = script;
    this.#whenDone = whenDone;
  }

  async generate(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const turns = Array.isArray(this.#script)
      ? (this.#script as readonly ScriptTurn[])
      : (this.#script as Readonly<Record<string, readonly ScriptTurn[]>>)[request.agent];
    if (!turns) throw new Error(`the script has no turns for agent ${JSON.stringify(request.agent)}`);
    const index = this.#turnsIn(request.messages);
    const turn = turns[index] ?? (this.#whenDone === 'repeat' ? turns[turns.length - 1] : undefined) ?? { text: '' };
    const response = typeof turn === 'function' ? await turn(request) : turn;
    if (!response.toolCalls) return response;
    return {
      ...response,
      toolCalls: response.toolCalls.map((call, i) => {
        const own = call as { id?: unknown; name?: unknown; type?: unknown; functionCall?: unknown };
        if (
          typeof own.name === 'string' &&
          own.type === undefined &&
          own.functionCall === undefined &&
          typeof own.id !== 'string'
        ) {
          return { ...call, id: `call_${index}_${i}` };
        }
        return call;
      }),
    };
  }

  #turnsIn(messages: ModelRequest['messages']): number {
    const seen = this.#counted.get(messages);
    // A shorter array than last time is not the transcript it was (a caller reusing an array): count afresh.
    let { length, turns } = seen && seen.length <= messages.length ? seen : { length: 0, turns: 0 };
    for (; length < messages.length; length++) if (messages[length]!.role === 'assistant') turns++;
    this.#counted.set(messages, { length, turns });
    return turns;
  }
}
