/** True when `db` names a PostgreSQL database (`postgres://` or `postgresql://`) rather than an SQLite file. */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}
