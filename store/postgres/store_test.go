package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r/store/storetest"
	"github.com/h4r/h4r/tokens"
)

func TestStoreContract(t *testing.T) {
	testDSN(t) // skip (or fail in CI) once, not in every subtest
	storetest.Run(t,
		func(t *testing.T) storetest.Store { return newStore(t) },
		storetest.WithReopen(func(t *testing.T) func(t *testing.T) storetest.Store {
			dsn := newSchema(t)
			return func(t *testing.T) storetest.Store { return openAt(t, dsn) }
		}),
		storetest.WithFailingWrites(func(t *testing.T) (storetest.Store, func(id string)) {
			dsn := newSchema(t)
			return openAt(t, dsn), func(id string) { failWritesOf(t, dsn, id) }
		}),
		storetest.WithEncodings(func(t *testing.T) func(t *testing.T, encoding string) storetest.Store {
			dsn := newSchema(t)
			return func(t *testing.T, encoding string) storetest.Store {
				counter, err := tokens.New(encoding)
				if err != nil {
					t.Fatal(err)
				}
				return openAt(t, dsn, WithTokenCounter(counter))
			}
		}),
	)
}

// failWritesOf installs a test-only trigger in the schema of dsn that makes
// the database refuse any write of item id.
func failWritesOf(t *testing.T, dsn, id string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	fn := `CREATE FUNCTION fail_sentinel() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.id = ` + quoteLiteral(id) + ` THEN RAISE EXCEPTION 'test trigger refuses this item'; END IF;
			RETURN NEW;
		END $$`
	for _, stmt := range []string{fn, `CREATE TRIGGER fail_sentinel BEFORE INSERT OR UPDATE ON items FOR EACH ROW EXECUTE FUNCTION fail_sentinel()`} {
		if _, err := conn.Exec(t.Context(), stmt); err != nil {
			t.Fatalf("installing the failing trigger: %v", err)
		}
	}
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func TestPackStoreContract(t *testing.T) {
	testDSN(t)
	storetest.RunPacks(t, func(t *testing.T) storetest.PackStore { return newStore(t) })
}
