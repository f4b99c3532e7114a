package main

// `sluice user`, after kafka-configs.sh --entity-type users with
// SCRAM-SHA-256/512 credentials: it creates, lists and deletes SCRAM
// credentials through AlterUserScramCredentials and
// DescribeUserScramCredentials (KIP-554). The salted password is computed
// here (kadm.AlterUserSCRAMs): the password itself never goes on the wire.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func userCmd(args []string, stdout, stderr io.Writer) int {
	return runSubcommand("user", []subcommand{
		{"create", "NAME --mechanism SCRAM-SHA-256|SCRAM-SHA-512 --password PW [--iterations N]",
			"create a SCRAM credential, or replace the user's credential of that mechanism", userCreate},
		{"list", "[NAME...]",
			"list users with SCRAM credentials: mechanism and iterations", userList},
		{"delete", "NAME [--mechanism M]",
			"delete a user's SCRAM credentials (default: of every mechanism)", userDelete},
	}, args, stdout, stderr)
}

// parseMechanism parses a SCRAM mechanism name as Kafka writes it.
func parseMechanism(s string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(s) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, usageErr("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", s)
}

// mechanismName is Kafka's name of m (kadm's String says SCRAM-SHA-256
// too, but an unknown value prints as a number here).
func mechanismName(m kadm.ScramMechanism) string {
	switch m {
	case kadm.ScramSha256:
		return "SCRAM-SHA-256"
	case kadm.ScramSha512:
		return "SCRAM-SHA-512"
	}
	return "UNKNOWN(" + strconv.Itoa(int(m)) + ")"
}

func userCreate(c *adminCmd) error {
	mech := c.flags.String("mechanism", "", "SCRAM-SHA-256 or SCRAM-SHA-512 (required)")
	password := c.flags.String("password", "", "the user's password (required)")
	iterations := c.flags.Int("iterations", 4096, "PBKDF2 iterations, 4096 to 16384")
	pos, err := c.parse(exactlyOne("user name"))
	if err != nil {
		return err
	}
	if *mech == "" {
		return usageErr("--mechanism is required: SCRAM-SHA-256 or SCRAM-SHA-512")
	}
	m, err := parseMechanism(*mech)
	if err != nil {
		return err
	}
	if *password == "" {
		return usageErr("--password is required")
	}
	if *iterations < 4096 || *iterations > 16384 {
		return usageErr("--iterations %d: want 4096 to 16384", *iterations)
	}
	name := pos[0]
	return c.connect(func(adm *kadm.Client, ctx context.Context) error {
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
			{User: name, Mechanism: m, Iterations: int32(*iterations), Password: *password},
		})
		if err != nil {
			return c.brokerErr("create user "+name, err)
		}
		if err := alteredErr(name, res); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "Created %s credential for user %s (%d iterations).\n", mechanismName(m), name, *iterations)
		return nil
	})
}

// alteredErr is the error the broker gave for user in an
// AlterUserScramCredentials answer, nil when it succeeded.
func alteredErr(user string, res kadm.AlteredUserSCRAMs) error {
	r, ok := res[user]
	switch {
	case !ok:
		return fmt.Errorf("%s: the broker's answer does not mention the user", user)
	case r.Err != nil:
		return fmt.Errorf("%s: %s", user, errText(r.Err, r.ErrMessage))
	}
	return nil
}

func userList(c *adminCmd) error {
	return c.run(anyArgs, func(adm *kadm.Client, ctx context.Context, names []string) error {
		described, err := adm.DescribeUserSCRAMs(ctx, names...)
		if err != nil {
			return c.brokerErr("describe users", err)
		}
		var failed failures
		t := newTable(c.stdout, "USER", "MECHANISM", "ITERATIONS")
		for _, d := range described.Sorted() {
			if d.Err != nil {
				if errors.Is(d.Err, kerr.ResourceNotFound) {
					failed.add("%s: no SCRAM credentials", d.User)
				} else {
					failed.add("%s: %s", d.User, errText(d.Err, d.ErrMessage))
				}
				continue
			}
			for _, ci := range d.CredInfos {
				t.row(d.User, mechanismName(ci.Mechanism), strconv.Itoa(int(ci.Iterations)))
			}
		}
		t.flush()
		return failed.err()
	})
}

func userDelete(c *adminCmd) error {
	mech := c.flags.String("mechanism", "", "delete only this mechanism's credential (default: every mechanism the user has)")
	pos, err := c.parse(exactlyOne("user name"))
	if err != nil {
		return err
	}
	var only kadm.ScramMechanism
	if *mech != "" {
		if only, err = parseMechanism(*mech); err != nil {
			return err
		}
	}
	name := pos[0]
	return c.connect(func(adm *kadm.Client, ctx context.Context) error {
		mechs := []kadm.ScramMechanism{only}
		if only == 0 {
			described, err := adm.DescribeUserSCRAMs(ctx, name)
			if err != nil {
				return c.brokerErr("describe user "+name, err)
			}
			d, ok := described[name]
			switch {
			case !ok || errors.Is(d.Err, kerr.ResourceNotFound) || d.Err == nil && len(d.CredInfos) == 0:
				return fmt.Errorf("user %s has no SCRAM credentials", name)
			case d.Err != nil:
				return fmt.Errorf("%s: %s", name, errText(d.Err, d.ErrMessage))
			}
			mechs = mechs[:0]
			for _, ci := range d.CredInfos {
				mechs = append(mechs, ci.Mechanism)
			}
		}
		// One request per mechanism: a user may appear only once in an
		// AlterUserScramCredentials request.
		for _, m := range mechs {
			res, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: name, Mechanism: m}}, nil)
			if err != nil {
				return c.brokerErr("delete user "+name, err)
			}
			if err := alteredErr(name, res); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "Deleted %s credential of user %s.\n", mechanismName(m), name)
		}
		return nil
	})
}
