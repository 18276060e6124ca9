// pgx (Go, github.com/jackc/pgx/v4) against weir: connect (the URL carries the
// password and sslmode), DDL, a parameterized insert, a select of every type,
// an error with its SQLSTATE, COPY FROM STDIN (CSV, through pgconn, and
// Conn.CopyFrom, which sends PostgreSQL's binary COPY format), and the
// catalog lookups pgx makes for types it does not know.
//
// Usage: go run pgx_smoke.go 'postgresql://user:pw@host:port/db?sslmode=require'
// (GOPATH mode with Debian's golang-github-jackc-pgx-v4-dev: GO111MODULE=off
// GOPATH=/usr/share/gocode).
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
)

func check(ok bool, format string, args ...interface{}) {
	if !ok {
		fmt.Fprintf(os.Stderr, "FAILED: "+format+"\n", args...)
		os.Exit(1)
	}
}

func must(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAILED: %s: %v\n", what, err)
		os.Exit(1)
	}
}

func main() {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Args[1])
	must(err, "connect")
	defer conn.Close(ctx)

	if strings.Contains(os.Args[1], "sslmode=require") {
		check(conn.PgConn().Conn() != nil, "connection")
		var ssl bool
		// The TLS state the server reports for this session.
		err = conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl)
		if err == nil {
			check(ssl, "pg_stat_ssl.ssl is false on a TLS connection")
		}
	}

	_, err = conn.Exec(ctx, "DROP TABLE IF EXISTS pgx_cpu")
	must(err, "drop")
	_, err = conn.Exec(ctx, "CREATE TABLE pgx_cpu (host STRING, ts TIMESTAMP TIME INDEX, usage DOUBLE, n BIGINT, i INT, f REAL, ok BOOLEAN, PRIMARY KEY (host))")
	must(err, "create")

	ts := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tag, err := conn.Exec(ctx, "INSERT INTO pgx_cpu VALUES ($1, $2, $3, $4, $5, $6, $7)", "a", ts, 1.5, int64(1)<<40, int32(-7), float32(0.25), true)
	must(err, "insert")
	check(tag.RowsAffected() == 1, "insert count %d", tag.RowsAffected())

	var (
		host  string
		gotTs time.Time
		usage float64
		n     int64
		i     int32
		f     float32
		ok    bool
		s     int16
		v     string
		d     time.Time
		iv    time.Duration
	)
	err = conn.QueryRow(ctx, "SELECT host, ts, usage, n, i, f, ok, 2::smallint, 'x'::varchar, DATE '2024-02-03', INTERVAL '90 seconds' FROM pgx_cpu WHERE host = $1", "a").
		Scan(&host, &gotTs, &usage, &n, &i, &f, &ok, &s, &v, &d, &iv)
	must(err, "select")
	check(host == "a", "text %q", host)
	check(gotTs.Equal(ts), "timestamp %v", gotTs)
	check(usage == 1.5, "double %v", usage)
	check(n == int64(1)<<40, "bigint %v", n)
	check(i == -7, "int %v", i)
	check(f == 0.25, "real %v", f)
	check(ok, "bool")
	check(s == 2, "smallint %v", s)
	check(v == "x", "varchar %q", v)
	check(d.Format("2006-01-02") == "2024-02-03", "date %v", d)
	check(iv == 90*time.Second, "interval %v", iv)

	// timestamptz and a NULL.
	var tz time.Time
	var null *int64
	err = conn.QueryRow(ctx, "SELECT TIMESTAMPTZ '2024-01-01 00:00:00+00', NULL::bigint").Scan(&tz, &null)
	must(err, "timestamptz")
	check(tz.Equal(ts), "timestamptz %v", tz)
	check(null == nil, "null")

	// An error carries its SQLSTATE, and the connection stays usable.
	_, err = conn.Exec(ctx, "SELECT * FROM no_such_table")
	var pgErr *pgconn.PgError
	check(errors.As(err, &pgErr), "expected a PgError, got %v", err)
	check(pgErr.Code == "42P01", "sqlstate %s", pgErr.Code)
	_, err = conn.Exec(ctx, "SELECT 1/0")
	check(errors.As(err, &pgErr) && pgErr.Code == "22012", "division by zero: %v", err)

	// COPY FROM STDIN (CSV) through pgconn.
	res, err := conn.PgConn().CopyFrom(ctx, strings.NewReader("b,2024-01-01 00:00:01,2.5\nc,2024-01-01 00:00:02,3.5\n"),
		"COPY pgx_cpu (host, ts, usage) FROM STDIN WITH (FORMAT csv)")
	must(err, "copy")
	check(res.RowsAffected() == 2, "copy count %d", res.RowsAffected())
	var count int64
	must(conn.QueryRow(ctx, "SELECT count(*) FROM pgx_cpu").Scan(&count), "count")
	check(count == 3, "count %d", count)

	// Conn.CopyFrom: COPY ... FROM STDIN BINARY, every column type, a NULL.
	copyRows := [][]interface{}{
		{"d", ts.Add(3 * time.Second), 4.5, int64(-1) << 41, int32(12), float32(-1.5), false},
		{"e", ts.Add(4 * time.Second), nil, nil, nil, nil, nil},
	}
	copied, err := conn.CopyFrom(ctx, pgx.Identifier{"pgx_cpu"}, []string{"host", "ts", "usage", "n", "i", "f", "ok"}, pgx.CopyFromRows(copyRows))
	must(err, "binary copy")
	check(copied == 2, "binary copy count %d", copied)
	err = conn.QueryRow(ctx, "SELECT ts, usage, n, i, f, ok FROM pgx_cpu WHERE host = 'd'").Scan(&gotTs, &usage, &n, &i, &f, &ok)
	must(err, "select copied")
	check(gotTs.Equal(ts.Add(3*time.Second)) && usage == 4.5 && n == int64(-1)<<41 && i == 12 && f == -1.5 && !ok,
		"copied row %v %v %v %v %v %v", gotTs, usage, n, i, f, ok)
	var nullUsage *float64
	must(conn.QueryRow(ctx, "SELECT usage FROM pgx_cpu WHERE host = 'e'").Scan(&nullUsage), "select copied null")
	check(nullUsage == nil, "copied NULL %v", nullUsage)
	_, err = conn.Exec(ctx, "DELETE FROM pgx_cpu WHERE host IN ('d', 'e')")
	must(err, "delete copied")

	// COPY TO STDOUT through pgconn: text, and binary (PostgreSQL's
	// PGCOPY header, one record, the trailer).
	var out bytes.Buffer
	_, err = conn.PgConn().CopyTo(ctx, &out, "COPY (SELECT host, usage FROM pgx_cpu WHERE host = 'b') TO STDOUT")
	must(err, "copy to")
	check(out.String() == "b\t2.5\n", "copy to text %q", out.String())
	out.Reset()
	_, err = conn.PgConn().CopyTo(ctx, &out, "COPY (SELECT 7::int4 AS n) TO STDOUT (FORMAT binary)")
	must(err, "copy to binary")
	want := "PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x04\x00\x00\x00\x07\xff\xff"
	check(out.String() == want, "copy to binary %q", out.String())

	// Many rows through the extended protocol, with the statement cache.
	rows, err := conn.Query(ctx, "SELECT host, usage FROM pgx_cpu WHERE usage > $1 ORDER BY host", 1.0)
	must(err, "query")
	var hosts []string
	for rows.Next() {
		var h string
		var u float64
		must(rows.Scan(&h, &u), "scan")
		hosts = append(hosts, h)
	}
	must(rows.Err(), "rows")
	check(strings.Join(hosts, ",") == "a,b,c", "hosts %v", hosts)

	// A transaction that rolls back.
	tx, err := conn.Begin(ctx)
	must(err, "begin")
	_, err = tx.Exec(ctx, "INSERT INTO pgx_cpu (host, ts, usage) VALUES ('tx', '2024-01-01 00:01:00', 9)")
	must(err, "insert in tx")
	must(tx.Rollback(ctx), "rollback")
	must(conn.QueryRow(ctx, "SELECT count(*) FROM pgx_cpu").Scan(&count), "count")
	check(count == 3, "count after rollback %d", count)

	// The catalog lookups pgx and tools make: the table's OID and primary key.
	var pk string
	err = conn.QueryRow(ctx, "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c WHERE c.conrelid = 'pgx_cpu'::regclass AND c.contype = 'p'").Scan(&pk)
	must(err, "pk")
	check(pk == "PRIMARY KEY (host, ts)", "pk %q", pk)

	_, err = conn.Exec(ctx, "DROP TABLE pgx_cpu")
	must(err, "drop")
	fmt.Println("pgx ok")
}
