package load

import (
	"testing"
	"time"
)

// TestTransactionalConfig: a transactional id takes the default commit
// interval, gives each of several producers an id of its own, and is
// refused with acks other than all or in consume mode.
func TestTransactionalConfig(t *testing.T) {
	c, err := Config{Mode: ModeProduce, TransactionalID: "tx"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.TransactionInterval != DefaultTransactionInterval || c.transactionalID(0) != "tx" {
		t.Errorf("one producer: interval %v, id %q", c.TransactionInterval, c.transactionalID(0))
	}
	c, err = Config{Mode: ModeE2E, TransactionalID: "tx", Producers: 3, TransactionInterval: time.Second}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.TransactionInterval != time.Second || c.transactionalID(0) != "tx-0" || c.transactionalID(2) != "tx-2" {
		t.Errorf("three producers: interval %v, ids %q %q", c.TransactionInterval, c.transactionalID(0), c.transactionalID(2))
	}
	if c, _ := (Config{Mode: ModeProduce}).withDefaults(); c.transactionalID(0) != "" {
		t.Errorf("no transactional id: producer id %q", c.transactionalID(0))
	}
	for _, bad := range []Config{
		{Mode: ModeProduce, TransactionalID: "tx", Acks: "1"},
		{Mode: ModeProduce, TransactionalID: "tx", Acks: "0"},
		{Mode: ModeProduce, TransactionalID: "tx", TransactionInterval: -time.Millisecond},
		{Mode: ModeConsume, TransactionalID: "tx"},
		{Mode: ModeConsume, Isolation: "read_dirty"},
	} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
	for _, iso := range []string{"", "read_uncommitted", "read_committed"} {
		if _, err := (Config{Mode: ModeConsume, Isolation: iso}).withDefaults(); err != nil {
			t.Errorf("isolation %q: %v", iso, err)
		}
	}
}
