/**
 * Spare AbortControllers for tool signals (a signal is ~3 µs to make on Node 20): a finished call's
 * controller — never aborted, no listener left — serves a later call's tool. Only where both sides allow it:
 * the call is a gateway call (`gatewayCall`, execute.ts) and its tool was marked by {@link releasesSignal},
 * which the gateway's own upstream tools are (their MCP client drops the signal when the request ends). A
 * tool registered by hand that keeps its signal once it succeeded (a dependent `AbortSignal.any`, background
 * polling: no listener on the signal itself to tell) would otherwise see a later call's cancel. The gateway's
 * 2026-07-28 fast path (gateway/modern-fast.ts) takes its requests' signals here too and gives each back once its
 * response has closed with the whole answer written: that signal reaches only the session's handlers, which
 * drop it when the call settles, as the stdio fast path's requests' do (gateway/fastpath.ts keeps its own).
 */
import { getEventListeners } from 'node:events';
import type { Tool } from '../tool.js';

const spare: AbortController[] = [];
const SPARE = 8;
const releasing = new WeakSet<Tool>();

/**
 * Marks `tool` as keeping no hold of its `signal` once its execute settled: its finished calls' controllers
 * may serve later gateway calls. For tools whose execute hands the signal only to something known to drop it
 * (mcp/tools.ts's tools on the gateway's own upstream client); never for a tool a user registers.
 */
export function releasesSignal<T extends Tool>(tool: T): T {
  releasing.add(tool);
  return tool;
}

/** Whether a gateway call of `tool` may take and give back pooled controllers. */
export function pools(tool: Tool): boolean {
  return releasing.has(tool);
}

/** A spare controller, or a new one. */
export function takeController(): AbortController {
  return spare.pop() ?? new AbortController();
}

/** Keeps a finished call's controller for a later one: true when kept (not aborted, no listener left, room). */
export function keepController(controller: AbortController): boolean {
  if (controller.signal.aborted || spare.length >= SPARE || getEventListeners(controller.signal, 'abort').length > 0)
    return false;
  spare.push(controller);
  return true;
}
