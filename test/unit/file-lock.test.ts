// The key file's lock on a full disk: a lock whose holder could not be written is removed, so the next
// writer, once there is room, takes it at once rather than wait for it to turn stale.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withFileLock } from "../../src/keys/file-lock.js";

describe("withFileLock on a full disk", () => {
  const dir = mkdtempSync(join(tmpdir(), "file-lock-"));
  const lockPath = join(dir, "master.key.lock");
  const ballast = join(dir, "ballast");
  let mounted = false;

  beforeAll(() => {
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", dir], { stdio: "pipe" });
      mounted = true;
    } catch {
      // not root, or no mount here: the test is skipped
    }
  });
  afterAll(() => {
    if (mounted) execFileSync("umount", [dir]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("leaves no lock behind when its holder cannot be written, and the next writer takes it at once when there is room", async (ctx) => {
    if (!mounted) ctx.skip();
    // A file as large as the file system takes: the lock file can still be made (an inode), not written.
    execFileSync("sh", ["-c", `dd if=/dev/zero of=${ballast} bs=64k 2>/dev/null || true`]);
    await expect(withFileLock(lockPath, async () => "held")).rejects.toMatchObject({ code: "ENOSPC", path: lockPath });
    expect(existsSync(lockPath)).toBe(false);
    rmSync(ballast);
    const started = Date.now();
    expect(await withFileLock(lockPath, async () => "held", { waitMs: 1_000 })).toBe("held");
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(existsSync(lockPath)).toBe(false);
  });
});
