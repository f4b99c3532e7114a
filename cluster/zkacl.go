package cluster

// ZooKeeper ACLs as Kafka's ZooKeeper mode sets them (ZkData.defaultAcls,
// Kafka 3.x): with zookeeper.set.acl=true every znode a broker creates
// carries
//
//	auth::cdrwa         the creator's authenticated identities (its digest
//	                    user, its x509 certificate DN), which all brokers
//	                    share: they may do anything
//	world:anyone:r      anyone may read, except under the sensitive roots
//	                    (SCRAM credentials in /config/users, dynamic broker
//	                    configs in /config/brokers, delegation tokens)
//
// and without it world:anyone:cdrwa, as before. /consumers stays open in
// both (the old consumers wrote there). SetACLs rewrites the ACLs of an
// existing cluster's znodes to either (Kafka's
// zookeeper-security-migration).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

var (
	// openACL is ZooDefs.Ids.OPEN_ACL_UNSAFE.
	openACL = zk.WorldACL(zk.PermAll)
	// secureACL is CREATOR_ALL_ACL plus READ_ACL_UNSAFE.
	secureACL = []zk.ACL{{Perms: zk.PermAll, Scheme: "auth", ID: ""}, {Perms: zk.PermRead, Scheme: "world", ID: "anyone"}}
	// sensitiveACL is CREATOR_ALL_ACL alone.
	sensitiveACL = zk.AuthACL(zk.PermAll)
)

// sensitiveRootPaths are Kafka's ZkData.SensitiveRootPaths: znodes at or
// below them (by string prefix, as Kafka matches) are readable by the
// brokers' identity only.
var sensitiveRootPaths = []string{configUsersPath, "/config/brokers", "/delegation_token/tokens"}

// secureRootPaths are Kafka's ZkData.SecureRootPaths (with
// ZkAclStore.securePaths): the trees SetACLs walks, besides the root.
var secureRootPaths = []string{
	"/admin", "/brokers", "/cluster", "/config", controllerPath, "/controller_epoch",
	isrChangePath, "/latest_producer_id_block", "/log_dir_event_notification",
	"/delegation_token", "/kafka-acl-extended", "/migration", "/feature",
	"/kafka-acl", "/kafka-acl-changes", "/kafka-acl-extended/prefixed", "/kafka-acl-extended-changes",
}

// sensitivePath is Kafka's ZkData.sensitivePath; p is chroot-relative.
func sensitivePath(p string) bool {
	for _, root := range sensitiveRootPaths {
		if strings.HasPrefix(p, root) {
			return true
		}
	}
	return false
}

// defaultACL is Kafka's ZkData.defaultAcls: the ACL of the znode at the
// chroot-relative path p. The returned slice is shared: do not modify it.
func defaultACL(secure bool, p string) []zk.ACL {
	switch {
	case !secure || p == "/consumers":
		return openACL
	case sensitivePath(p):
		return sensitiveACL
	}
	return secureACL
}

// SetACLsOptions configures SetACLs.
type SetACLsOptions struct {
	// ZkConnect is zookeeper.connect, "host:port,.../chroot".
	ZkConnect string
	// Security authenticates the tool as the brokers do (digest, TLS);
	// Security.SetACL is what the znodes get: true is Kafka's
	// --zookeeper.acl=secure, false --zookeeper.acl=unsecure.
	Security ZkSecurity
	// SessionTimeout bounds the wait for a session (default 30 s, the
	// tool's --zookeeper.session.timeout in Kafka).
	SessionTimeout time.Duration
	Logger         *slog.Logger
}

// SetACLsResult counts what SetACLs did.
type SetACLsResult struct {
	Updated int      // znodes whose ACL was set
	Missing []string // secure root paths that do not exist (a wrong chroot?)
}

// SetACLs sets the ACL of the chroot and of every znode under Kafka's
// secure root paths to defaultACL, walking each tree depth first, as
// Kafka's ZkSecurityMigrator does: it secures a cluster whose brokers were
// already restarted with zookeeper.set.acl=true and the same identity
// (their new znodes are secure), or opens one before the brokers drop
// their identity. Znodes deleted meanwhile are skipped. Setting an ACL
// needs ADMIN on the znode: an unauthenticated or other identity gets
// zk.ErrNoAuth for a znode already secured by someone else.
func SetACLs(ctx context.Context, o SetACLsOptions) (SetACLsResult, error) {
	var res SetACLsResult
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	servers, chroot, err := parseConnect(o.ZkConnect)
	if err != nil {
		return res, err
	}
	if o.Security.SetACL && o.Security.Digest == "" && (o.Security.TLS == nil || len(o.Security.TLS.Certificates) == 0) {
		return res, errors.New("cluster: secure ACLs need an identity: zookeeper.auth.digest (or a TLS client certificate) as the brokers use")
	}
	z, err := connectZK(servers, o.SessionTimeout, o.Security, o.Logger, nil)
	if err != nil {
		return res, err
	}
	defer z.conn.Close()
	z.chroot = chroot
	set := func(p string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, err := z.conn.SetACL(z.p(p), defaultACL(o.Security.SetACL, p), -1)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case err != nil:
			return fmt.Errorf("cluster: set the ACL of %s: %w", z.p(p), err)
		}
		res.Updated++
		return nil
	}
	var walk func(p string) error
	walk = func(p string) error {
		if err := set(p); err != nil {
			return err
		}
		kids, err := z.children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cluster: list %s: %w", z.p(p), err)
		}
		for _, k := range kids {
			if err := walk(p + "/" + k); err != nil {
				return err
			}
		}
		return nil
	}
	// The chroot itself ("/" of the cluster), then each secure tree.
	if chroot != "" {
		if _, err := z.conn.SetACL(chroot, defaultACL(o.Security.SetACL, chroot), -1); err != nil {
			return res, fmt.Errorf("cluster: set the ACL of %s: %w", chroot, err)
		}
		res.Updated++
	} else if err := set("/"); err != nil {
		return res, err
	}
	for i, root := range secureRootPaths {
		if slices.ContainsFunc(secureRootPaths[:i], func(r string) bool { return strings.HasPrefix(root, r+"/") }) {
			continue // walked with its ancestor
		}
		ok, _, err := z.exists(root)
		if err != nil {
			return res, fmt.Errorf("cluster: %s: %w", z.p(root), err)
		}
		if !ok {
			res.Missing = append(res.Missing, root)
			continue
		}
		if err := walk(root); err != nil {
			return res, err
		}
	}
	return res, nil
}
