// AuthService: the token exchange and the calling token's self-inspection (whoami), over every transport.
import type { ServiceImpl } from "@connectrpc/connect";
import { AuthService } from "../../gen/enterprise_admin/v1/auth_pb.js";
import type { RateLimits } from "../domain/rate-limits.js";
import { principalOf } from "../interceptors/auth.js";
import { callLogKey } from "../interceptors/call-log.js";
import type { AccessAdmin } from "../operations/access-admin.js";

export function authService(access: AccessAdmin, rateLimits: RateLimits): ServiceImpl<typeof AuthService> {
  return {
    async createAccessToken(request, context) {
      const clientAddress = context.values.get(callLogKey)?.clientAddress;
      return rateLimits.exchange(request.appId, clientAddress, () => access.exchange(request.appId, request.appSecret));
    },
    async whoAmI(_request, context) {
      return access.whoami(principalOf(context));
    },
  };
}
