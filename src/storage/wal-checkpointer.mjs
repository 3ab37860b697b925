// Worker thread: copies the SQLite write-ahead log back into the database file in the background, on
// a connection of its own, so that the checkpoint a server's commit runs finds little left to copy
// (see startWalCheckpointer in database.ts). Plain JavaScript: it needs nothing but the driver.
import { parentPort, workerData } from "node:worker_threads";
import SqliteDatabase from "better-sqlite3";

const db = new SqliteDatabase(workerData.path, { fileMustExist: true });
db.pragma("busy_timeout = 1000");
db.pragma("synchronous = NORMAL");

// Each round re-arms the timer when it ends (refresh), so a slow round is followed by a full pause.
const timer = setTimeout(() => {
  try {
    // PASSIVE: copies what no reader still needs and never blocks the writer or the readers.
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    // Busy or interrupted: the next round tries again.
  }
  timer.refresh();
}, workerData.intervalMs);

parentPort.on("message", (message) => {
  if (message !== "stop") return;
  clearTimeout(timer);
  // The last connection to close checkpoints the whole log and removes it.
  db.close();
  parentPort.close();
});
