package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/actors/cluster"
	"github.com/oja-exchange/oja/cmd/oja/waltools"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway"
	"github.com/oja-exchange/oja/wal/eventlog"
)

// serveCluster is `oja serve --cluster FILE --node ID`: one node of a
// replicated cluster (actors/cluster). The node listens on its addresses
// from the file (--listen and --admin-listen are not used), keeps its Raft
// log and snapshots in <data>/raft, and runs the actors only while it
// leads; otherwise its gateway forwards to the leader.
func serveCluster(cfg *serveConfig, logger *slog.Logger) error {
	file, self, nodeTLS, err := clusterMember(cfg, logger)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.data, 0o750); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	token, err := clusterAdminToken(cfg.data)
	if err != nil {
		return err
	}
	logger = logger.With("node", self.ID)

	var srvRef atomic.Pointer[gateway.Server]
	history, err := openHistory(cfg, logger)
	if err != nil {
		return err
	}
	defer history.Close() // after the node, whose replica feeds it, has closed
	node, err := openClusterNode(cfg, file, self.ID, nodeTLS, history, logger, func(key engine.BookKey, t *engine.Ticker) {
		if srv := srvRef.Load(); srv != nil {
			srv.RateChanged(key, t)
		}
	})
	if err != nil {
		return err
	}
	gw := cfg.gatewayConfig(logger, token, history)
	gw.Listen, gw.AdminListen, gw.Cluster = self.Public, self.Admin, node
	gw.Backup = func(dir string, _ bool) error { return clusterBackup(node, cfg.data, dir) }
	gw.Collectors = []prometheus.Collector{newClusterCollector(node)}
	srv := gateway.New(gw)
	srvRef.Store(srv)
	node.OnLeaderChange(srv.LeaderChanged)
	if err := srv.Start(); err != nil {
		_ = node.Close()
		return err
	}
	logger.Info("cluster node listening", "public", srv.Addr(), "admin", srv.AdminAddr(), "raft", self.Raft, "data", cfg.data)

	// Each leadership term is served until it ends; with --demo, the
	// market simulator runs for as long as the term does.
	node.Run(func(term *actors.Term) {
		srv.SetTerm(term)
		if cfg.demo {
			simulator := startMarketSimulator(term.System(), simulatorSeed, simulatorInterval, logger)
			go func() {
				<-term.Done()
				simulator.Stop()
			}()
		}
	})

	serveUntilSignal(logger, func() {
		if sys := node.System(); sys != nil {
			sys.Maintain()
		}
	}, cfg.publicCert, cfg.adminCert)
	return stopClusterNode(srv, node, logger)
}

// openClusterNode opens this node's Raft node (cluster.Open): its log
// under the data dir, the history its replica feeds, --from-backup's
// state, the actors (rateChanged hears their rates), each term's webhook
// dispatcher, and --demo's seed through the first leader.
func openClusterNode(cfg *serveConfig, file *cluster.File, self string, nodeTLS *cluster.NodeTLS, history *eventlog.Store,
	logger *slog.Logger, rateChanged func(engine.BookKey, *engine.Ticker)) (*cluster.Node, error) {
	var fromBackup func() (uint64, []byte, error)
	if cfg.fromBackup != "" {
		fromBackup = func() (uint64, []byte, error) {
			state, seq, err := waltools.StateOf(cfg.fromBackup)
			if err != nil {
				return 0, nil, err
			}
			logger.Info("seeding from a backup", "backup", cfg.fromBackup, "seq", seq, "quotes", state.Quotes.Len())
			return seq, engine.EncodeState(state), nil
		}
	}
	node, err := cluster.Open(cluster.Config{
		Events: historySink(history), TLS: nodeTLS, FromBackup: fromBackup,
		File: file, Self: self, Dir: filepath.Join(cfg.data, "raft"), Sync: cfg.sync, Join: cfg.join,
		Logger: logger, SnapshotEvery: cfg.snapshotEvery,
		HeartbeatTimeout: cfg.raftTimeout, ElectionTimeout: cfg.raftTimeout, LeaderLeaseTimeout: cfg.raftTimeout / 2,
		Actors: cfg.actorsConfig(logger, rateChanged),
		Webhooks: func(sys *actors.System) actors.Webhooks {
			return newDispatcher(cfg, logger, func() *actors.System { return sys })
		},
		// --demo seeds once, through the first leader (its data dir gets
		// demo.key); later leaders find the demo client and leave it be.
		Seed: func(sys *actors.System) error {
			if !cfg.demo || slices.ContainsFunc(sys.Clients(), func(c *engine.Client) bool { return c.Name == demoClientName }) {
				return nil
			}
			return seedDemo(sys, cfg.data, logger)
		},
	})
	return node, err
}

// clusterMember reads the cluster file and finds this node (--node) in
// it, with its mutual TLS (--cluster-tls), or none under
// --cluster-insecure, which it warns about.
func clusterMember(cfg *serveConfig, logger *slog.Logger) (*cluster.File, cluster.Member, *cluster.NodeTLS, error) {
	file, err := cluster.LoadFile(cfg.cluster)
	if err != nil {
		return nil, cluster.Member{}, nil, err
	}
	self, ok := file.Member(cfg.node)
	if !ok {
		return nil, cluster.Member{}, nil, fmt.Errorf("--node %q is not in %s (members: %s)", cfg.node, cfg.cluster, memberIDs(file))
	}
	if cfg.clusterTLS == "" {
		logger.Warn("--cluster-insecure: Raft between nodes is plain TCP; anyone who reaches a Raft port can write to the cluster",
			"node", self.ID)
		return file, self, nil, nil
	}
	nodeTLS, err := cluster.LoadTLS(cfg.clusterTLS, file, self.ID)
	if err != nil {
		return nil, cluster.Member{}, nil, usageErrorf("--cluster-tls: %v", err)
	}
	return file, self, nodeTLS, nil
}

// stopClusterNode is a cluster node's shutdown once a signal came.
func stopClusterNode(srv *gateway.Server, node *cluster.Node, logger *slog.Logger) error {
	// SIGTERM ends the process within clusterShutdownMax whatever state
	// Raft is in: the connections get clusterDrainMax, the node closes
	// within its own bound (cluster.Node.Close: what does not stop in
	// time is abandoned and named), and a watchdog ends the process if
	// anything else hangs.
	watchdog := time.AfterFunc(clusterShutdownMax, func() {
		logger.Error("shutdown: not done within the bound; exiting now", "bound", clusterShutdownMax)
		os.Exit(1)
	})
	defer watchdog.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), clusterDrainMax)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		logger.Warn("shutdown: connections cut", "err", err)
	}
	err := node.Close() // stops the actors (and the simulator through Run's callback)
	if errors.Is(err, cluster.ErrAbandoned) {
		logger.Warn("stopped, with what the node could not stop in time abandoned (every acknowledged write is on disk)", "err", err)
		return nil
	}
	logger.Info("stopped")
	return err
}

// Bounds of a cluster node's shutdown (docs/cluster.md: SIGTERM exits within
// 15 s): draining the listeners, then closing the node (its own bound).
const (
	clusterDrainMax    = 4 * time.Second
	clusterShutdownMax = 14 * time.Second
)

// clusterAdminToken is the admin token of a cluster node. Followers forward
// admin requests to the leader and ask their peers for their status, so
// every node must hold the same token: OJA_ADMIN_TOKEN, or an admin.token
// file the operator placed in each data dir. A node never makes one up.
func clusterAdminToken(data string) (string, error) {
	if t, err := existingAdminToken(data); t != "" || err != nil {
		return t, err
	}
	return "", errors.New("cluster mode needs the same admin token on every node: set OJA_ADMIN_TOKEN, or write it to admin.token in each node's data dir")
}

func memberIDs(f *cluster.File) string {
	ids := make([]string, len(f.Nodes))
	for i, m := range f.Nodes {
		ids[i] = m.ID
	}
	return strings.Join(ids, ", ")
}

// clusterCollector exposes the node's Raft figures on /metrics.
type clusterCollector struct {
	node                                 *cluster.Node
	term, leader, changes                *prometheus.Desc
	commitIndex, appliedIndex, lastIndex *prometheus.Desc
	lastContact                          *prometheus.Desc
}

// Raft's timeouts (--raft-timeout). hashicorp/raft's leader heartbeats
// every tenth of the heartbeat timeout; a follower that hears nothing for a
// random time between one and two timeouts starts a pre-vote, and an
// election that splits waits another one to two. Raft's own default (1 s)
// makes a leader's death cost 1-2 s of silence before any election
// (measured: 2.1 s to elect a leader after a SIGKILL). On a LAN a round
// trip is well under a millisecond, and the network transport answers a
// heartbeat apart from log writes (its fast path), so a slow fsync does
// not delay it: 300 ms is still ten heartbeats (every 30 ms) missed in a
// row, which no healthy LAN node misses. Measured over 20 SIGKILLs of the
// leader (bench/cluster.sh): p99 2.2 s with 300 ms, 2.8 s with 500 ms,
// 5.3 s with 1 s. Pre-vote (on in hashicorp/raft since 1.7) keeps a node
// that was cut off from forcing a new term when it returns. On a WAN, or
// hosts that stall for hundreds of milliseconds, raise it.
const (
	raftTimeoutLAN = 300 * time.Millisecond
	raftTimeoutMin = 100 * time.Millisecond
	raftTimeoutMax = time.Minute
)

func newClusterCollector(node *cluster.Node) *clusterCollector {
	desc := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &clusterCollector{node: node,
		term:         desc("oja_cluster_term", "Current Raft term."),
		leader:       desc("oja_cluster_leader", "1 while this node is the Raft leader, else 0."),
		changes:      desc("oja_cluster_leader_changes_total", "Times this node gained or lost the leadership since it started (Raft may coalesce quick flips)."),
		commitIndex:  desc("oja_cluster_commit_index", "Last Raft index known committed."),
		appliedIndex: desc("oja_cluster_applied_index", "Last Raft index applied to this node's replica."),
		lastIndex:    desc("oja_cluster_last_index", "Last Raft index in this node's log."),
		lastContact:  desc("oja_cluster_last_contact_seconds", "On a follower, time since the leader was last heard from (0 on the leader)."),
	}
}

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.term, c.leader, c.changes, c.commitIndex, c.appliedIndex, c.lastIndex, c.lastContact} {
		ch <- d
	}
}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.node.Metrics()
	leading := 0.0
	if m.Leading {
		leading = 1
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	gauge(c.term, float64(m.Term))
	gauge(c.leader, leading)
	ch <- prometheus.MustNewConstMetric(c.changes, prometheus.CounterValue, float64(m.LeaderChanges))
	gauge(c.commitIndex, float64(m.CommitIndex))
	gauge(c.appliedIndex, float64(m.AppliedIndex))
	gauge(c.lastIndex, float64(m.LastIndex))
	gauge(c.lastContact, m.LastContact.Seconds())
}
