package gateway

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// A partner's own API keys (spec §15.4).

const keysPath = apiBase + "/partners/keys"

// keyRollHoursMax bounds expiresInHours: the old key of a roll works at
// most 30 days more.
const keyRollHoursMax = 720

// listKeys is GET /api/v1/partners/keys: the caller's client's keys that
// work, in the calling key's mode (as every partner route, one mode at a
// time), oldest first: {"data":[{"keyId","mode","createdAt","expiresAt"?,
// "rolledFrom"?,"lastUsedAt"?}],"hasMore":false}; expiresAt on a rolled key
// that still works, rolledFrom on a key a roll made (the key it replaced),
// lastUsedAt once it authenticated a request (to the minute). Never a
// secret (the service keeps only their hashes); revoked and expired keys
// are left out (the operator's GET /admin/v1/clients/{id} lists them).
func (s *Server) listKeys(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	if _, e := queryParams(ctx); e != nil {
		s.writeError(ctx, e)
		return
	}
	s.writeObject(ctx, fasthttp.StatusOK, func(w *jsonWriter) {
		w.openArray("data")
		now := svc.market.Now().UnixMilli()
		for _, k := range svc.directory.ClientKeys(who.Client) {
			if k.Mode != who.Mode || !k.Works(now) {
				continue
			}
			appendKey(w, &k, false)
		}
		w.closeArray()
		w.boolean("hasMore", false)
	})
}

// appendKey writes k as both APIs show a key: never its secret; revoked
// only for an operator (a partner's list leaves revoked keys out).
func appendKey(w *jsonWriter, k *engine.Key, revoked bool) {
	w.open("")
	w.id("keyId", k.ID)
	w.str("mode", k.Mode.String())
	w.time("createdAt", k.CreatedAt)
	if revoked {
		w.boolean("revoked", k.Revoked)
	}
	if k.ExpiresAt != 0 {
		w.time("expiresAt", k.ExpiresAt)
	}
	if !k.RolledFrom.IsZero() {
		w.id("rolledFrom", k.RolledFrom)
	}
	if k.LastUsedAt != 0 {
		w.time("lastUsedAt", k.LastUsedAt)
	}
	w.close()
}

// rollKey is POST /api/v1/partners/keys/{keyId}/roll {"expiresInHours"} →
// 201 {"keyId","key","mode"}: a new key for the caller's client and mode
// (its secret shown only here), and the rolled key stops working that many
// hours from now (0: at once; at most 720), both in one durable record.
// The rolled key may be the calling one. A key of another client or mode,
// or one that no longer works, answers 404 like a missing one. A key is
// rolled once: a key rolled already (or being rolled, concurrently) is 409
// CONFLICT; its successor may roll.
func (s *Server) rollKey(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	id, ok := s.pathUUID(ctx, "keyId")
	if !ok {
		return
	}
	o, ok := s.jsonRequest(ctx)
	if !ok {
		return
	}
	var hours int64
	if text, ok := o.number("expiresInHours", true); ok {
		n, err := strconv.ParseInt(string(text), 10, 64)
		if err != nil || n < 0 || n > keyRollHoursMax {
			o.problem("expiresInHours", "must be a whole number of hours from 0 (at once) to "+strconv.Itoa(keyRollHoursMax))
		}
		hours = n
	}
	if e := o.finish(); e != nil {
		s.writeError(ctx, e)
		return
	}
	reply := svc.directory.Admin(&actors.RollKey{Client: who.Client, Mode: who.Mode, Key: engine.KeyID(id),
		ExpiresIn: time.Duration(hours) * time.Hour})
	if s.adminFailed(ctx, reply.Err, reply.Result) {
		return
	}
	s.writeObject(ctx, fasthttp.StatusCreated, func(w *jsonWriter) {
		w.id("keyId", reply.Key.ID)
		w.str("key", reply.Secret)
		w.str("mode", reply.Key.Mode.String())
	})
}
