package group

import (
	"context"
	"crypto/rand"
	"fmt"
)

// clientKey is the context key of the client identity set by WithClient.
type clientKey struct{}

type clientInfo struct{ id, host string }

// WithClient returns ctx carrying the request header's client id and the
// client's host (the remote address without port), which JoinGroup records
// per member and DescribeGroups shows. The server sets it per request.
func WithClient(ctx context.Context, clientID, clientHost string) context.Context {
	return context.WithValue(ctx, clientKey{}, clientInfo{clientID, clientHost})
}

// clientFrom returns the identity WithClient stored in ctx, or empty strings.
func clientFrom(ctx context.Context) (id, host string) {
	ci, _ := ctx.Value(clientKey{}).(clientInfo)
	return ci.id, ci.host
}

// newMemberID returns prefix + "-" + a random UUID, as Kafka builds member
// ids (the prefix is the group.instance.id of a static member, else the
// client id).
func newMemberID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
