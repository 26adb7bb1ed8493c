/**
 * How the MCP client reaches a server: a local process over stdio, a Streamable HTTP endpoint, or a
 * transport the caller made; and the inbound tap every connection gets (the era check, and the
 * gateway's synchronous progress and log relay).
 */
import { StreamableHTTPClientTransport, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { describe } from '../names.js';

/** How to start a local MCP server over stdio. */
export interface McpStdioServer {
  readonly command: string;
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** What to do with the server's stderr. @default 'inherit' */
  readonly stderr?: 'inherit' | 'ignore' | 'pipe';
}

/** Where a server is: exactly one of `stdio`, `url`, `transport`. */
export interface McpEndpoint {
  /** A local server to spawn over stdio. */
  readonly stdio?: McpStdioServer;
  /** A remote server over Streamable HTTP. */
  readonly url?: string | URL;
  /** Request headers for `url` (e.g. an Authorization header). @default {} */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * A client transport of the MCP SDK (v2, or a v1 transport: the interface is the same). Used once:
   * connecting again needs a new one.
   */
  readonly transport?: Transport;
}

/** A new transport for `endpoint`. Throws a TypeError naming what is wrong with it. */
export function openTransport(endpoint: McpEndpoint): Transport {
  if (endpoint.transport) return endpoint.transport;
  if (endpoint.stdio) {
    const { command, args, env, cwd, stderr } = endpoint.stdio;
    if (typeof command !== 'string' || command === '')
      throw new TypeError(`option "stdio.command" must be a non-empty string, got ${describe(command)}`);
    return new StdioClientTransport({
      command,
      args: [...(args ?? [])],
      ...(env ? { env: { ...env } } : {}), // the SDK adds PATH, HOME and the like
      ...(cwd ? { cwd } : {}),
      stderr: stderr ?? 'inherit',
    });
  }
  let url: URL;
  try {
    url = endpoint.url instanceof URL ? endpoint.url : new URL(String(endpoint.url));
  } catch {
    throw new TypeError(`option "url" must be an absolute URL, got ${describe(endpoint.url)}`);
  }
  return new StreamableHTTPClientTransport(
    url,
    endpoint.headers ? { requestInit: { headers: { ...endpoint.headers } } } : undefined,
  );
}

/**
 * What the tap does with one inbound message: pass it on (`undefined`), pass another message in its place
 * (an error response for a refused answer), or take it (`null`: the client never sees it).
 */
export type InboundTap = (message: JSONRPCMessage) => JSONRPCMessage | null | undefined;

/**
 * Runs `inbound` on every message the server sends, synchronously as it arrives and before the SDK sees
 * it, and `outbound` on every message the client sends. The SDK hands notifications to their handlers a
 * microtask later than responses, so progress (and a log line) sent just before a result would otherwise
 * be handled after the call had ended and be lost or misdirected; and an answer the era check refuses
 * must be replaced before the SDK resolves the request.
 */
export function tapTransport(
  transport: Transport,
  hooks: { readonly inbound: InboundTap; readonly outbound?: (message: JSONRPCMessage) => void },
): Transport {
  // A transport that is connected already has its handler: it is kept, and runs after the hook.
  let inner: Transport['onmessage'] = transport.onmessage;
  const tapped: NonNullable<Transport['onmessage']> = (message, extra) => {
    const replaced = hooks.inbound(message);
    if (replaced === null) return;
    inner?.(replaced ?? message, extra);
  };
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    // Unset until the client sets its handler (the SDK reads the previous one to chain it).
    get: () => (inner ? tapped : undefined),
    set: (handler: Transport['onmessage']) => {
      inner = handler;
    },
  });
  const outbound = hooks.outbound;
  if (outbound) {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      outbound(message);
      return send(message, options);
    };
  }
  return transport;
}
