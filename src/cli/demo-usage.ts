// Demo usage for `seed --demo`: about three months of weekday-heavy usage for the demo members over
// built-in and custom models. Deterministic per day, so seeding twice records nothing new.
import { formatMicros } from "../domain/money.js";
import type { RawUsageEvent } from "../domain/usage-event.js";
import { demoDirectory } from "./demo-directory.js";

const MODELS = [
  { model_name: "atlas-4", model_type: "Chat", model_source: "Builtin", inputMicros: 3, outputMicros: 15 },
  { model_name: "atlas-4-mini", model_type: "Chat", model_source: "Builtin", inputMicros: 1, outputMicros: 4 },
  { model_name: "swift-complete", model_type: "CUE", model_source: "Builtin", inputMicros: 1, outputMicros: 2 },
  { model_name: "demo-finetune-7b", model_type: "Chat", model_source: "Custom", inputMicros: 0, outputMicros: 0 },
] as const;

export const DEMO_USAGE_DAYS = 90;

export function demoUsageEvents(now = Date.now()): RawUsageEvent[] {
  const today = Math.floor(now / 1000 / 86_400);
  const events: RawUsageEvent[] = [];
  let seed = 7;
  const rand = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
  for (let day = today - DEMO_USAGE_DAYS; day < today; day++) {
    const weekday = (day + 4) % 7 < 5; // 1970-01-01 was a Thursday
    demoDirectory.members.forEach((member, m) => {
      const count = Math.floor(rand() * (weekday ? 12 : 3));
      for (let k = 0; k < count; k++) {
        const model = MODELS[(m + k + Math.floor(rand() * 3)) % MODELS.length]!;
        const input = 500 + Math.floor(rand() * 6000);
        const output = 100 + Math.floor(rand() * 1500);
        const charge = input * model.inputMicros + output * model.outputMicros;
        const fromQuota = model.model_source === "Builtin" && rand() < 0.6;
        const timestamp = day * 86_400 + 3600 + Math.floor(rand() * 10 * 3600);
        events.push({
          event_id: `demo-${member.user_id}-${day}-${k}`,
          user_id: member.user_id,
          model_name: model.model_name,
          model_type: model.model_type,
          model_source: model.model_source,
          timestamp,
          input_tokens: input,
          output_tokens: output,
          basic_amount: fromQuota ? formatMicros(BigInt(charge)) : "0",
          pay_go_amount: fromQuota ? "0" : formatMicros(BigInt(charge)),
        });
      }
    });
  }
  return events;
}
