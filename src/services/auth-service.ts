// AuthService: the token exchange and the calling token's self-inspection (whoami), over every transport.
import { AuthService } from "../../gen/enterprise_admin/v1/auth_pb.js";
import type { RateLimits } from "../domain/rate-limits.js";
import type { Handlers } from "../interceptors/call-pipeline.js";
import type { AccessAdmin } from "../operations/access-admin.js";

export function authHandlers(access: AccessAdmin, rateLimits: RateLimits): Handlers<typeof AuthService> {
  return {
    async createAccessToken(request, call) {
      return rateLimits.exchange(request.appId, call.clientAddress, () => access.exchange(request.appId, request.appSecret));
    },
    async whoAmI(_request, { principal }) {
      return access.whoami(principal);
    },
  };
}
