// connect-node's request handler (connectNodeAdapter) with its one difference: an answer that fails
// while it is written, as when the caller resets its stream or drops its connection mid-answer, is
// handed to `answerFailed` (the service's log) rather than printed by console.error, a stack trace on
// stderr beside the JSON log lines.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { createConnectRouter, type ConnectRouter, type ConnectRouterOptions, type ContextValues } from "@connectrpc/connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";

type NodeRequest = IncomingMessage | Http2ServerRequest;
type NodeResponse = ServerResponse | Http2ServerResponse;

export interface RpcAdapterOptions extends ConnectRouterOptions {
  routes(router: ConnectRouter): void;
  contextValues(req: NodeRequest): ContextValues;
  /** A request for no procedure of the router's. */
  fallback(req: NodeRequest, res: NodeResponse): void;
  answerFailed(req: NodeRequest, res: NodeResponse, reason: unknown): void;
}

export function rpcAdapter(options: RpcAdapterOptions): (req: NodeRequest, res: NodeResponse) => void {
  const router = createConnectRouter(options);
  options.routes(router);
  const handlers = new Map(router.handlers.map((handler) => [handler.requestPath, handler]));
  return (req, res) => {
    const handler = handlers.get((req.url ?? "").split("?", 2)[0]!);
    if (!handler) return options.fallback(req, res);
    handler(universalRequestFromNodeRequest(req, res, undefined, options.contextValues(req)))
      .then((answer) => universalResponseToNodeResponse(answer, res))
      .catch((reason: unknown) => options.answerFailed(req, res, reason));
  };
}
