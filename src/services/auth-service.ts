// AuthService: the token exchange over every transport.
import { AuthService } from "../../gen/enterprise_admin/v1/auth_pb.js";
import type { Handlers } from "../interceptors/call-pipeline.js";
import type { RateLimits } from "../interceptors/rate-limit.js";
import type { AccessAdmin } from "../operations/access-admin.js";

export function authHandlers(access: AccessAdmin, rateLimits: RateLimits): Handlers<typeof AuthService> {
  return {
    async createAccessToken(request, call) {
      // Before the secret is checked, so guessing is slow whatever the guesses are.
      rateLimits.admitExchange(request.appId, call.clientAddress);
      return access.exchange(request.appId, request.appSecret);
    },
  };
}
