// Loaded with the entry, so that `nestjs-payments/postgres` without `pg` installed fails at import
// with one line naming it (the package's entry checks the peers the code loads at once), rather
// than at the store's first operation with Node's own error and a require stack.
import 'pg';
