package server

import (
	"fmt"
	"testing"
)

func TestErrorMessageDropsSentinel(t *testing.T) {
	err := fmt.Errorf("%w: topic %q already exists", errTopicExists, "foo")
	if got := *errorMessage(err); got != `topic "foo" already exists` {
		t.Fatalf("got %q", got)
	}
	if got := *errorMessage(errTopicExists); got != errTopicExists.Error() {
		t.Fatalf("bare sentinel: got %q", got)
	}
	if errorMessage(nil) != nil {
		t.Fatal("nil error has a message")
	}
}
