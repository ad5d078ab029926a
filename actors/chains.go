package actors

import (
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
)

// Watched chains (engine/chain.go): how far each chain's deposits were
// read, and the transfers found that were not credited — as the log has
// them. A chain watcher (actors/chainwatch) reads its cursor here at the
// start of its term and records each step with RecordChainProgress; the
// coordinator writes it once durable.

// chainsView is the watched chains' read model.
type chainsView struct {
	mu sync.RWMutex
	m  map[engine.Chain]engine.ChainState
}

func (c *chainsView) init(state map[engine.Chain]*engine.ChainState) {
	c.m = make(map[engine.Chain]engine.ChainState, len(state))
	for ch, st := range state {
		c.m[ch] = *st
	}
}

// ChainState is what the log says of chain ch (ok false: nothing yet).
// Its Unapplied is shared: do not modify it.
func (s *System) ChainState(ch engine.Chain) (engine.ChainState, bool) {
	s.chains.mu.RLock()
	defer s.chains.mu.RUnlock()
	st, ok := s.chains.m[ch]
	return st, ok
}

// ChainStates is every chain the log says something of.
func (s *System) ChainStates() map[engine.Chain]engine.ChainState {
	s.chains.mu.RLock()
	defer s.chains.mu.RUnlock()
	return maps.Clone(s.chains.m)
}

// RecordChainProgress asks the coordinator to record a watcher's step.
// Reply: *ChainReply.
type RecordChainProgress struct {
	Progress *engine.ChainProgressed
}

// ChainReply answers RecordChainProgress: Err nil once it is durable.
type ChainReply struct {
	Err error
}

// RecordChainProgress records ev durably and in the read model: a chain
// watcher's step (spec §16.2).
func (s *System) RecordChainProgress(ev *engine.ChainProgressed) error {
	if err := s.writable(); err != nil {
		return err
	}
	reply, err := ask(s, s.coordinator, &RecordChainProgress{Progress: ev})
	if err != nil {
		return err
	}
	return reply.Err
}

// chainDurable is the coordinator's own message once a ChainProgressed
// is durable (or failed).
type chainDurable struct {
	ev      *engine.ChainProgressed
	replyTo *actor.PID
	err     error
}

// chainCommand records a watcher's step: checked as replay checks it
// (a logged record must apply on every replica), logged, then published.
func (a *coordinatorActor) chainCommand(ctx actor.Context, msg any) {
	sys := a.sys
	switch cmd := msg.(type) {
	case *RecordChainProgress:
		ev := cmd.Progress
		if ev == nil {
			ctx.Respond(&ChainReply{Err: errors.New("actors: no chain progress to record")})
			return
		}
		if err := ev.Check(); err != nil {
			ctx.Respond(&ChainReply{Err: err})
			return
		}
		ev.At = max(ev.At, sys.nowMillis())
		replyTo, self := ctx.Sender(), addressOf(ctx, a)
		sys.appendThen(func(err error) delivery {
			return deliver(self, &chainDurable{ev: ev, replyTo: replyTo, err: err})
		}, ev)
	case *chainDurable:
		if cmd.err == nil {
			sys.chains.mu.Lock()
			st := sys.chains.m[cmd.ev.Chain]
			st.Unapplied = slices.Clone(st.Unapplied) // readers hold the old one
			st.Apply(cmd.ev)
			sys.chains.m[cmd.ev.Chain] = st
			sys.chains.mu.Unlock()
		}
		ctx.Send(cmd.replyTo, &ChainReply{Err: cmd.err})
	}
}
