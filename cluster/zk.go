package cluster

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/go-zookeeper/zk"
)

// zkClient is a go-zookeeper connection seen through the chroot of
// zookeeper.connect: every path it takes and returns is chroot-relative.
// Safe for concurrent use.
type zkClient struct {
	conn   *zk.Conn
	chroot string // "" or "/a/b"
	// secure is zookeeper.set.acl: znodes are created with Kafka's secure
	// ACLs (defaultACL, zkacl.go), else open to all.
	secure bool
}

// acl is the ACL a znode at the chroot-relative path p is created with.
func (z *zkClient) acl(p string) []zk.ACL { return defaultACL(z.secure, p) }

func (z *zkClient) p(p string) string { return z.chroot + p }

func (z *zkClient) get(p string) ([]byte, *zk.Stat, error) { return z.conn.Get(z.p(p)) }

func (z *zkClient) getW(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	return z.conn.GetW(z.p(p))
}

func (z *zkClient) children(p string) ([]string, error) {
	c, _, err := z.conn.Children(z.p(p))
	return c, err
}

func (z *zkClient) childrenW(p string) ([]string, <-chan zk.Event, error) {
	c, _, ch, err := z.conn.ChildrenW(z.p(p))
	return c, ch, err
}

func (z *zkClient) exists(p string) (bool, *zk.Stat, error) { return z.conn.Exists(z.p(p)) }

func (z *zkClient) existsW(p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	return z.conn.ExistsW(z.p(p))
}

func (z *zkClient) create(p string, data []byte, flags int32) (string, error) {
	s, err := z.conn.Create(z.p(p), data, flags, z.acl(p))
	return strings.TrimPrefix(s, z.chroot), err
}

func (z *zkClient) set(p string, data []byte, version int32) (*zk.Stat, error) {
	return z.conn.Set(z.p(p), data, version)
}

func (z *zkClient) delete(p string, version int32) error { return z.conn.Delete(z.p(p), version) }

// ensurePath creates p and its missing parents as empty persistent znodes.
func (z *zkClient) ensurePath(p string) error {
	return z.ensureAbs(z.p(p))
}

// ensureAbs creates the absolute path abs (the chroot included) and its
// missing parents; each gets the ACL of its path below the chroot (the
// chroot and its parents that of their own path, as Kafka creates a
// chroot).
func (z *zkClient) ensureAbs(abs string) error {
	conn := z.conn
	if abs == "" || abs == "/" {
		return nil
	}
	ok, _, err := conn.Exists(abs)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	if err := z.ensureAbs(path.Dir(abs)); err != nil {
		return err
	}
	rel := abs
	if z.chroot != "" && strings.HasPrefix(abs, z.chroot+"/") {
		rel = strings.TrimPrefix(abs, z.chroot)
	}
	if _, err := conn.Create(abs, nil, 0, z.acl(rel)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("cluster: create %s: %w", abs, err)
	}
	return nil
}

// createParents creates p with data, creating missing parents first.
func (z *zkClient) createParents(p string, data []byte, flags int32) (string, error) {
	s, err := z.create(p, data, flags)
	if errors.Is(err, zk.ErrNoNode) {
		if err := z.ensurePath(path.Dir(p)); err != nil {
			return "", err
		}
		s, err = z.create(p, data, flags)
	}
	return s, err
}

// deleteRecursive deletes p and everything under it; a missing p is fine.
func (z *zkClient) deleteRecursive(p string) error {
	kids, err := z.children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := z.deleteRecursive(p + "/" + k); err != nil {
			return err
		}
	}
	if err := z.delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

// multi runs ops atomically. On failure it returns the error of the op
// that failed (ZooKeeper marks the other ops "runtime inconsistency").
func (z *zkClient) multi(ops ...any) ([]zk.MultiResponse, error) {
	for _, op := range ops {
		switch o := op.(type) {
		case *zk.CreateRequest:
			if o.Acl == nil {
				o.Acl = z.acl(o.Path)
			}
			o.Path = z.p(o.Path)
		case *zk.SetDataRequest:
			o.Path = z.p(o.Path)
		case *zk.DeleteRequest:
			o.Path = z.p(o.Path)
		case *zk.CheckVersionRequest:
			o.Path = z.p(o.Path)
		}
	}
	res, err := z.conn.Multi(ops...)
	if err == nil {
		return res, nil
	}
	for _, r := range res {
		for _, e := range []error{zk.ErrBadVersion, zk.ErrNodeExists, zk.ErrNoNode, zk.ErrNotEmpty} {
			if errors.Is(r.Error, e) {
				return res, e
			}
		}
	}
	return res, err
}

// ensureClusterID returns the id in /cluster/id, creating the znode with
// local (or a new random id when local is "") when it does not exist yet.
// When two brokers race to create it, the loser reads the winner's. A
// broker whose local id differs from the cluster's gets
// ErrInconsistentClusterID: its data dir belongs to another cluster.
func (z *zkClient) ensureClusterID(local string) (string, error) {
	for range 3 {
		data, _, err := z.get(clusterIDPath)
		if err == nil {
			id, err := parseClusterID(data)
			if err != nil {
				return "", err
			}
			if local != "" && local != id {
				return "", fmt.Errorf("%w: this broker's data belongs to cluster %s, but %s in ZooKeeper is %s",
					ErrInconsistentClusterID, local, clusterIDPath, id)
			}
			return id, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return "", fmt.Errorf("cluster: read %s: %w", clusterIDPath, err)
		}
		id := local
		if id == "" {
			id = NewClusterID()
		}
		data, _ = json.Marshal(clusterIDZNode{Version: "1", ID: id})
		_, err = z.createParents(clusterIDPath, data, 0)
		if err == nil {
			return id, nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return "", fmt.Errorf("cluster: create %s: %w", clusterIDPath, err)
		}
		// another broker created it first: read theirs
	}
	return "", fmt.Errorf("cluster: %s keeps appearing and disappearing", clusterIDPath)
}

// NewClusterID returns a new random cluster id: 16 random bytes in URL-safe
// base64 without padding (22 characters), as Kafka makes them.
func NewClusterID() string {
	var raw [16]byte
	rand.Read(raw[:])
	return base64.RawURLEncoding.EncodeToString(raw[:])
}
