package postgres

import (
	"testing"

	"github.com/h4r/h4r/sources/storetest"
)

func TestStoreContract(t *testing.T) {
	testDSN(t) // skip (or fail in CI) once, not in every subtest
	storetest.Run(t,
		func(t *testing.T) storetest.Store { return newStore(t) },
		storetest.WithReopen(func(t *testing.T) func(t *testing.T) storetest.Store {
			dsn := newSchema(t)
			return func(t *testing.T) storetest.Store { return openAt(t, dsn) }
		}),
	)
}
