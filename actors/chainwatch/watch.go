// Package chainwatch watches chains for token transfers to Oja's deposit
// addresses and credits each confirmed one (spec §16.2): one watcher per
// chain of the markets file's chainWatch, over standard Ethereum JSON-RPC
// (go-ethereum's ethclient, rpc and abi packages; TRON through its
// Ethereum-compatible JSON-RPC, its addresses as 20-byte hex).
//
// A watcher reads the ERC-20 Transfer logs of the configured contracts, a
// bounded range of confirmed blocks at a time (a block is confirmed when
// the chain's head is confirmations − 1 blocks past it), and credits each
// transfer to a live deposit address as an operator's seen would
// (System.RecordCryptoReceipt: identity (chain, txHash, logIndex), so a
// transfer read twice is credited once). Then it records how far it read —
// the block and its hash, as the node reports it — durably
// (engine.ChainProgressed): a restart, a kill -9 or a new leader resumes
// from that record. Before each step it asks for the hash of that block
// again; a different one is a reorganisation below the cursor, and the
// watcher rewinds by its confirmations and reads those blocks again. A
// transfer whose value the currency cannot hold exactly is recorded as
// unapplied, never rounded. RPC errors are retried with a growing pause and
// reported (Status); they never stop the service.
//
// The watchers of a term (Watchers) start with its actors and stop before
// them (actors.Term): in a cluster only the leader watches.
package chainwatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/big"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// System is what a watcher needs of the actors (*actors.System).
type System interface {
	ChainState(engine.Chain) (engine.ChainState, bool)
	RecordChainProgress(*engine.ChainProgressed) error
	DepositPayIn(ch engine.Chain, deposit string) (engine.AddressID, bool)
	PayInQuote(engine.AddressID) (*engine.Quote, bool)
	RecordCryptoReceipt(address engine.AddressID, amount engine.Amount, hash string, logIndex uint32, audit *engine.OperatorActed) *actors.ReceiptReply
}

// Bounds of a watcher.
const (
	// BlockRangeMax is the most blocks one eth_getLogs asks for: providers
	// cap ranges (and results), and a long outage is caught up in steps
	// of it.
	BlockRangeMax = 1_000
	// rpcTimeout bounds one RPC request.
	rpcTimeout = 15 * time.Second
	// backoffMax is the longest pause after RPC errors.
	backoffMax = time.Minute
)

// erc20ABI is the part of ERC-20 a watcher reads.
const erc20ABI = `[
 {"type":"function","name":"decimals","inputs":[],"outputs":[{"name":"","type":"uint8"}],"stateMutability":"view"},
 {"type":"event","name":"Transfer","anonymous":false,"inputs":[
  {"indexed":true,"name":"from","type":"address"},{"indexed":true,"name":"to","type":"address"},
  {"indexed":false,"name":"value","type":"uint256"}]}]`

var erc20 = func() abi.ABI {
	a, err := abi.JSON(strings.NewReader(erc20ABI))
	if err != nil {
		panic(err)
	}
	return a
}()

// Watchers are the watchers of a term, one per configured chain.
type Watchers struct {
	list []*Watcher
}

// Start starts a watcher for each chain of watch (nil or empty: none),
// crediting through sys. Stop them before sys stops.
func Start(sys System, markets *engine.Markets, watch map[engine.Chain]engine.ChainWatch, logger *slog.Logger) *Watchers {
	ws := &Watchers{}
	for _, ch := range slices.Sorted(maps.Keys(watch)) {
		ws.list = append(ws.list, start(sys, markets, ch, watch[ch], logger))
	}
	return ws
}

// Stop stops every watcher and waits for them: a step in flight finishes
// or is abandoned before anything it found is recorded.
func (ws *Watchers) Stop() {
	for _, w := range ws.list {
		w.stop()
	}
}

// Statuses reports each watcher, in chain order.
func (ws *Watchers) Statuses() []actors.ChainWatchStatus {
	out := make([]actors.ChainWatchStatus, 0, len(ws.list))
	for _, w := range ws.list {
		out = append(out, w.Status())
	}
	return out
}

// Watcher watches one chain.
type Watcher struct {
	sys     System
	chain   engine.Chain
	cfg     engine.ChainWatch
	tokens  map[common.Address]engine.Currency // contract → the currency it is
	logger  *slog.Logger
	cancel  context.CancelFunc
	done    chan struct{}
	stopped sync.Once

	// What Status reports; the watcher's goroutine writes it.
	mu         sync.Mutex
	head       uint64
	processed  uint64
	lastError  string
	lastPollAt int64
	rpcErrors  atomic.Uint64
}

func start(sys System, markets *engine.Markets, ch engine.Chain, cfg engine.ChainWatch, logger *slog.Logger) *Watcher {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{sys: sys, chain: ch, cfg: cfg, tokens: map[common.Address]engine.Currency{}, done: make(chan struct{}),
		logger: logger.With("component", "chainwatch", "chain", ch.String(), "rpc", cfg.RPCHost())}
	for code, contract := range cfg.Tokens {
		if c, ok := markets.CurrencyByCode(code); ok {
			w.tokens[common.Address(contract)] = c
		}
	}
	if st, ok := sys.ChainState(ch); ok {
		w.processed = st.Cursor.Block
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.run(ctx)
	return w
}

func (w *Watcher) stop() {
	w.stopped.Do(func() {
		w.cancel()
		<-w.done
	})
}

// Status reports the watcher.
func (w *Watcher) Status() actors.ChainWatchStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return actors.ChainWatchStatus{Chain: w.chain, RPCHost: w.cfg.RPCHost(), Head: w.head, Processed: w.processed,
		Confirmations: w.cfg.Confirmations, LastError: w.lastError, LastPollAt: w.lastPollAt, RPCErrors: w.rpcErrors.Load()}
}

// run polls until ctx ends: a step, then the poll interval — at once
// again while it is catching up, longer after errors.
func (w *Watcher) run(ctx context.Context) {
	defer close(w.done)
	poll := time.Duration(w.cfg.PollMillis) * time.Millisecond
	var client *ethclient.Client
	failures := 0
	for {
		var behind bool
		var err error
		if client == nil {
			client, err = w.dial(ctx)
		}
		if err == nil {
			behind, err = w.step(ctx, client)
		}
		wait := poll
		switch {
		case ctx.Err() != nil:
			if client != nil {
				client.Close()
			}
			return
		case err != nil:
			failures++
			w.failed(err)
			wait = min(backoffMax, poll<<min(failures, 10))
			wait = wait/2 + rand.N(wait/2+1) // jitter: watchers of many nodes do not beat together
		case behind:
			failures, wait = 0, 0
		default:
			failures = 0
		}
		select {
		case <-ctx.Done():
			if client != nil {
				client.Close()
			}
			return
		case <-time.After(wait):
		}
	}
}

func (w *Watcher) dial(ctx context.Context) (*ethclient.Client, error) {
	c, err := rpc.DialOptions(ctx, w.cfg.RPC, rpc.WithHTTPClient(&http.Client{Timeout: rpcTimeout}))
	if err != nil {
		return nil, err
	}
	return ethclient.NewClient(c), nil
}

// failed reports err: counted, logged and shown, the RPC URL (which may
// carry a provider's key) replaced by its host.
func (w *Watcher) failed(err error) {
	w.rpcErrors.Add(1)
	text := strings.ReplaceAll(err.Error(), w.cfg.RPC, w.cfg.RPCHost())
	w.mu.Lock()
	w.lastError = text
	w.mu.Unlock()
	w.logger.Warn("chain watch: RPC failed; retrying", "err", text)
}

// errReorg is a block whose hash changed between two reads in one step.
var errReorg = errors.New("the chain reorganised during the step")

// step reads the head, checks the cursor's block for a reorganisation,
// and processes the next confirmed range; behind reports that more
// confirmed blocks wait.
func (w *Watcher) step(ctx context.Context, client *ethclient.Client) (behind bool, err error) {
	head, err := client.BlockNumber(ctx)
	if err != nil {
		return false, err
	}
	st, has := w.sys.ChainState(w.chain)
	if has && st.Cursor.Hash != ([32]byte{}) {
		hash, err := w.blockHash(ctx, client, st.Cursor.Block)
		if err != nil {
			return false, err
		}
		if hash != st.Cursor.Hash {
			return true, w.rewind(ctx, client, st.Cursor)
		}
	}
	w.polled(head)
	through, ok := engine.ConfirmedThrough(head, w.cfg.Confirmations)
	next := w.cfg.StartBlock
	if has {
		next = st.Cursor.Block + 1
	}
	if !ok || through < next {
		return false, nil
	}
	to := min(through, next+BlockRangeMax-1)
	before, err := w.blockHash(ctx, client, to)
	if err != nil {
		return false, err
	}
	logs, err := client.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: new(big.Int).SetUint64(next), ToBlock: new(big.Int).SetUint64(to),
		Addresses: slices.Collect(maps.Keys(w.tokens)), Topics: [][]common.Hash{{erc20.Events["Transfer"].ID}}})
	if err != nil {
		return false, err
	}
	if after, err := w.blockHash(ctx, client, to); err != nil {
		return false, err
	} else if after != before {
		return false, errReorg
	}
	unapplied, err := w.credit(ctx, client, logs, to)
	if err != nil {
		return false, err
	}
	if err := w.record(to, before, unapplied); err != nil {
		return false, err
	}
	return to < through, nil
}

// polled notes a successful read of the head.
func (w *Watcher) polled(head uint64) {
	w.mu.Lock()
	w.head, w.lastError, w.lastPollAt = head, "", time.Now().UnixMilli()
	w.mu.Unlock()
}

// rewind moves the cursor back by the confirmations (at least one block)
// after the hash of the cursor's block changed: those blocks are read
// again, and what they hold now is credited (what was credited before is
// a repeat by its identity). A credited transfer that the reorganisation
// removed is not taken back: the log says which blocks to check.
func (w *Watcher) rewind(ctx context.Context, client *ethclient.Client, at engine.ChainCursor) error {
	back := min(at.Block, uint64(max(w.cfg.Confirmations, 1)))
	to := at.Block - back
	var hash [32]byte
	if to > 0 || w.cfg.StartBlock == 0 {
		h, err := w.blockHash(ctx, client, to)
		if err != nil {
			return err
		}
		hash = h
	}
	w.logger.Error("chain watch: the chain reorganised below the last block processed; reading the blocks again "+
		"(transfers credited from the blocks replaced are not taken back: check them)",
		"block", at.Block, "was", common.Hash(at.Hash).Hex(), "from", to+1)
	return w.record(to, hash, nil)
}

// credit credits each transfer of logs to a live deposit address, in
// chain order, and returns the transfers it could not credit exactly.
func (w *Watcher) credit(ctx context.Context, client *ethclient.Client, logs []types.Log, to uint64) ([]engine.ChainDeposit, error) {
	slices.SortFunc(logs, func(a, b types.Log) int {
		return cmp.Or(cmp.Compare(a.BlockNumber, b.BlockNumber), cmp.Compare(a.Index, b.Index))
	})
	decimals := map[common.Address]uint8{}
	var unapplied []engine.ChainDeposit
	for _, l := range logs {
		currency, watched := w.tokens[l.Address]
		if l.Removed || !watched || len(l.Topics) != 3 || l.BlockNumber > to {
			continue
		}
		deposit := engine.DepositAddress(w.chain, [20]byte(common.BytesToAddress(l.Topics[2].Bytes())))
		address, ok := w.sys.DepositPayIn(w.chain, deposit)
		if !ok {
			continue // an address Oja never issued
		}
		q, ok := w.sys.PayInQuote(address)
		if !ok || q.PayIn == nil || q.Mode != engine.ModeLive || q.PayIn.Currency != currency || q.PayIn.Chain != w.chain {
			continue // a sandbox address, or another token's
		}
		values, err := erc20.Events["Transfer"].Inputs.NonIndexed().Unpack(l.Data)
		if err != nil || len(values) != 1 {
			continue // not a standard Transfer
		}
		value := values[0].(*big.Int)
		d, ok := decimals[l.Address]
		if !ok {
			if d, err = w.decimals(ctx, client, l.Address); err != nil {
				return nil, err
			}
			decimals[l.Address] = d
		}
		hash := engine.TxHashText(w.chain, strings.TrimPrefix(l.TxHash.Hex(), "0x"))
		amount, reason := engine.TokenAmount(value, d, currency)
		if reason != 0 {
			unapplied = append(unapplied, engine.ChainDeposit{Tx: hash, LogIndex: uint32(l.Index), Block: l.BlockNumber,
				Address: address, Currency: currency, Value: value.String(), Decimals: d, Reason: reason})
			w.logger.Warn("chain watch: a deposit not credited", "tx", hash, "logIndex", l.Index, "value", value.String(),
				"decimals", d, "reason", reason.String())
			continue
		}
		reply := w.sys.RecordCryptoReceipt(address, amount, strings.TrimPrefix(l.TxHash.Hex(), "0x"), uint32(l.Index), nil)
		switch {
		case reply.Err != nil:
			return nil, fmt.Errorf("crediting %s:%d: %w", hash, l.Index, reply.Err)
		case reply.Result != engine.ResultOK:
			// A payment of that identity with another amount or address
			// (an operator's typo, recorded first): the operator's to
			// settle; the watcher goes on.
			w.logger.Error("chain watch: a deposit refused", "tx", hash, "logIndex", l.Index, "result", reply.Result.String())
		case !reply.Repeated:
			w.logger.Info("chain watch: deposit credited", "tx", hash, "logIndex", l.Index, "address", deposit,
				"amount", amount.Decimal(currency).String(), "currency", currency.String())
		}
	}
	return unapplied, nil
}

// record makes the cursor (to, hash) durable with the unapplied deposits
// found, a record per ChainUnappliedMax of them.
func (w *Watcher) record(to uint64, hash [32]byte, unapplied []engine.ChainDeposit) error {
	for {
		chunk := unapplied[:min(len(unapplied), engine.ChainUnappliedMax)]
		unapplied = unapplied[len(chunk):]
		ev := &engine.ChainProgressed{At: time.Now().UnixMilli(), Chain: w.chain, Cursor: engine.ChainCursor{Block: to, Hash: hash}, Unapplied: chunk}
		if err := w.sys.RecordChainProgress(ev); err != nil {
			return fmt.Errorf("recording block %d: %w", to, err)
		}
		if len(unapplied) == 0 {
			break
		}
	}
	w.mu.Lock()
	w.processed = to
	w.mu.Unlock()
	return nil
}

// blockHash is block n's hash as the node reports it (a header's hash
// computed here would be Ethereum's, which TRON's blocks are not).
func (w *Watcher) blockHash(ctx context.Context, client *ethclient.Client, n uint64) ([32]byte, error) {
	var block struct {
		Hash *common.Hash `json:"hash"`
	}
	if err := client.Client().CallContext(ctx, &block, "eth_getBlockByNumber", hexutil.EncodeUint64(n), false); err != nil {
		return [32]byte{}, err
	}
	if block.Hash == nil {
		return [32]byte{}, fmt.Errorf("block %d: not found", n)
	}
	return *block.Hash, nil
}

// decimals is a token contract's decimals().
func (w *Watcher) decimals(ctx context.Context, client *ethclient.Client, contract common.Address) (uint8, error) {
	data, err := erc20.Pack("decimals")
	if err != nil {
		return 0, err
	}
	out, err := client.CallContract(ctx, ethereum.CallMsg{To: &contract, Data: data}, nil)
	if err != nil {
		return 0, fmt.Errorf("decimals() of %s: %w", contract.Hex(), err)
	}
	values, err := erc20.Unpack("decimals", out)
	if err != nil || len(values) != 1 {
		return 0, fmt.Errorf("decimals() of %s: %v", contract.Hex(), err)
	}
	return values[0].(uint8), nil
}
