// Package cluster runs Oja as one node of a replicated cluster on
// hashicorp/raft (`oja serve --cluster FILE --node ID`).
//
// Every node keeps a replica of the state: its FSM applies each committed
// Raft entry — a batch of engine event records — with engine.State.Apply,
// numbering records from 1 like the single-node log. The leader alone runs
// the actors (package actors); their Log is raftLog, where an Append is one
// entry and done runs once the entry is committed on a majority (each
// member fsync'd it in its wal.RaftStore) and applied here. On gaining
// leadership a node commits a barrier, starts the actors from its
// replica's state itself — the FSM lends it and rebuilds a replica of its
// own beside them from its snapshot base and the entries since, handing
// out the effects of entries committed meanwhile once rebuilt — with a
// webhook dispatcher fed from the replica, and hands the two to the
// gateway as one actors.Term (Run's callback); on losing it, it ends the
// term, which stops them, and the gateway forwards to the new leader.
//
// A deposed leader cannot acknowledge a write the cluster lacks: its
// entries commit only with a majority in its term, and once a new term has
// begun they fail (ErrNotLeader) instead.
package cluster
