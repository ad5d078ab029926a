package gateway

import (
	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
)

// The route table of each listener: every route a listener serves, in
// one list, with the gate its handler is behind. The public listener's
// gates: partner (an API key, JSON errors) and fxPartner (the same, the
// XML FX API's errors). The admin listener's: operator (the admin token
// or an operator's, a running system), adminAuth (the token alone),
// rootOnly (the root token), console (a console session). Both listeners
// also serve /livez, /healthz and /readyz (baseRouter).

// route is one route: its method, its path (fasthttp/router's syntax) and
// its handler, gate included.
type route struct {
	method, path string
	handle       fasthttp.RequestHandler
}

const (
	get   = fasthttp.MethodGet
	post  = fasthttp.MethodPost
	put   = fasthttp.MethodPut
	patch = fasthttp.MethodPatch
	del   = fasthttp.MethodDelete
)

// publicRoutes is the public listener's table: the partner API (JSON),
// the rate stream (SSE), the FX API (XML) and its OpenAPI document.
func (s *Server) publicRoutes() []route {
	quote := apiBase + "/partners/marketplace/quote/{id}"
	return []route{
		{post, apiBase + "/partners/marketplace/intent", s.partner(s.createQuote)},
		{get, quote, s.partner(s.getQuote)},
		{get, quotesPath, s.partner(s.listQuotes)},
		{put, quote + "/accept", s.partner(s.acceptQuote)},
		{put, quote + "/cancel", s.partner(s.transition(actors.OperationCancel))},
		{put, quote + "/complete", s.partner(s.transition(actors.OperationComplete))},
		{get, apiBase + "/partners/balances", s.partner(s.balances)},
		{get, apiBase + "/partners/balances/currency/{currency}", s.partner(s.balancesByCurrency)},
		{get, apiBase + "/partners/balances/{accountId}", s.partner(s.balance)},
		{get, apiBase + "/partners/accounts/{accountId}/transactions", s.partner(s.partnerStatement)},
		{get, eventsPath, s.partner(s.listEvents)},
		{get, keysPath, s.partner(s.listKeys)},
		{post, keysPath + "/{keyId}/roll", s.partner(s.rollKey)},

		{post, webhooksPath, s.partner(s.createWebhook)},
		{get, webhooksPath, s.partner(s.listWebhooks)},
		{del, webhooksPath + "/{id}", s.partner(s.deleteWebhook)},
		{post, webhooksPath + "/{id}/test", s.partner(s.testWebhook)},
		{post, webhooksPath + "/{id}/rotate-secret", s.partner(s.rotateWebhookSecret)},
		{patch, webhooksPath + "/{id}", s.partner(s.updateWebhook)},

		// The SSE rate stream (spec §8).
		{get, ratesStreamPath, s.partner(s.rateStream)},

		// The XML FX API (spec §7).
		{post, fxBase + "/trades", s.fxPartner(s.fxInitiate)},
		{get, fxBase + "/trades/{id}", s.fxPartner(s.fxStatus)},
		{put, fxBase + "/trades/{id}/cancellation", s.fxPartner(s.fxCancel)},
		{post, fxBase + "/trades/{id}/confirmation", s.fxPartner(s.fxConfirm)},
		{post, fxBase + "/trades/{id}/accept", s.fxPartner(s.fxAccept)},
		{get, fxBase + "/listings", s.fxPartner(s.fxListings)},
		{get, fxBase + "/rates/makers", s.fxPartner(s.fxMakersRate)},

		{get, publicOpenAPIPath, s.serveOpenAPI(openAPIPublic)},
	}
}

// adminRoutes is the admin listener's API table: the admin API, the
// cluster's routes, metrics and its OpenAPI document; the operator
// console's routes (consoleRoutes) are served beside it.
func (s *Server) adminRoutes() []route {
	return []route{
		// Clients, keys, pools.
		{get, adminBase + "/clients", s.operator(s.listClients)},
		{post, adminBase + "/clients", s.operator(adminAPI(s, createClient))},
		{get, adminBase + "/clients/{clientId}", s.operator(s.getClient)},
		{post, adminBase + "/clients/{clientId}/keys", s.operator(adminAPI(s, createKey))},
		{get, adminBase + "/clients/{clientId}/webhooks", s.operator(s.clientWebhooks)},
		{del, adminBase + "/keys/{keyId}", s.operator(adminAPI(s, revokeKey))},
		{post, adminBase + "/pools", s.operator(adminAPI(s, createPool))},
		{get, adminBase + "/pools", s.operator(s.listPools)},
		{put, adminBase + "/pools/{poolId}/rate", s.operator(adminAPI(s, poolCommand(parseRate)))},
		{put, adminBase + "/pools/{poolId}/status", s.operator(adminAPI(s, poolCommand(parseStatus)))},
		{post, adminBase + "/pools/{poolId}/deposit", s.operator(adminAPI(s, poolCommand(parseMove(true))))},
		{post, adminBase + "/pools/{poolId}/withdraw", s.operator(adminAPI(s, poolCommand(parseMove(false))))},

		// Quotes.
		{get, adminBase + "/quotes/{quoteId}", s.operator(s.adminQuote)},
		{post, adminBase + "/quotes/{quoteId}/cancel", s.operator(adminAPI(s, operatorCancel))},
		{post, adminBase + "/quotes/{quoteId}/complete", s.operator(adminAPI(s, operatorComplete))},

		// Money: pay-ins, bank statements, wallets, credit.
		{post, adminBase + "/payins/bank", s.operator(adminAPI(s, bankReceipt))},
		{get, adminBase + "/payins/duplicates", s.operator(s.duplicateReceipts)},
		{post, adminBase + "/payins/{receiptId}/reverse", s.operator(s.reverseReceipt)},
		{get, adminBase + "/payins/{addressId}", s.operator(s.payInGet)},
		{post, adminBase + "/payins/{addressId}/seen", s.operator(s.payInSeen)},
		{post, statementsPath, s.adminAuth(s.importStatement)},
		{get, unappliedPath, s.operator(s.listUnapplied)},
		{post, unappliedPath + "/{unappliedId}/apply", s.operator(adminAPI(s, applyUnapplied))},
		{post, unappliedPath + "/{unappliedId}/return", s.operator(adminAPI(s, returnUnapplied))},
		{get, adminBase + "/chains", s.operator(s.listChains)},
		{get, adminBase + "/chains/unapplied", s.operator(s.listChainUnapplied)},
		{post, adminBase + "/accounts/{accountId}/deposit", s.operator(s.moveMoney(true))},
		{post, adminBase + "/accounts/{accountId}/withdraw", s.operator(s.moveMoney(false))},
		{get, adminBase + "/accounts/{accountId}/transactions", s.operator(s.adminStatement)},
		{put, adminBase + "/clients/{clientId}/credit", s.operator(adminAPI(s, setCredit))},
		{get, adminBase + "/ledger/check", s.operator(s.ledgerCheck)},

		// Operators and the audit trail.
		{post, adminBase + "/operators", s.rootOnly(s.createOperator)},
		{get, adminBase + "/operators", s.operator(s.listOperators)},
		{del, adminBase + "/operators/{operatorId}", s.rootOnly(s.revokeOperator)},
		{get, adminBase + "/audit", s.operator(s.auditTrail)},

		// The store and the cluster (errNotClustered on a single node).
		{post, adminBase + "/backup", s.adminAuth(s.backup)},
		{get, "/metrics", s.adminAuth(s.writeMetrics)},
		{get, adminBase + "/cluster", s.adminAuth(s.clusterOnly(s.clusterStatus))},
		{get, adminBase + "/cluster/node", s.adminAuth(s.clusterOnly(s.clusterNode))},
		{get, adminBase + "/state", s.adminAuth(s.clusterOnly(s.clusterState))},
		{post, adminBase + "/cluster/nodes", s.operator(s.clusterOperator(s.clusterAdd))},
		{post, adminBase + "/cluster/nodes/{nodeId}/replace", s.operator(s.clusterOperator(s.clusterReplace))},
		{del, adminBase + "/cluster/nodes/{nodeId}", s.operator(s.clusterOperator(s.clusterRemove))},

		{get, adminOpenAPIPath, s.serveOpenAPI(openAPIAdmin)},
	}
}

// consoleRoutes is the operator console's part of the admin listener's
// table: pages, and forms that post back (console.go).
func (ui *consoleUI) consoleRoutes() []route {
	return []route{
		{get, consoleBase + "/login", ui.consoleHeaders(ui.consoleLoginPage)},
		{post, consoleBase + "/login", ui.consoleHeaders(ui.consoleLogin)},
		{post, consoleBase + "/logout", ui.consoleHeaders(ui.consoleLogout)},
		{get, consoleBase + "/static/{file:*}", ui.consoleAsset},
		{get, consoleBase + "/", ui.console("overview", ui.consoleOverview)},
		{get, consoleBase + "/rates", ui.console("", ui.consoleRates)},
		{get, consoleBase + "/pools", ui.console("pools", ui.consolePools)},
		{post, consoleBase + "/pools", ui.console("pools", ui.consoleCreatePool)},
		{post, consoleBase + "/pools/{poolId}/{action}", ui.console("pools", ui.consolePoolAction)},
		{get, consoleBase + "/quotes", ui.console("quotes", ui.consoleQuotes)},
		{get, consoleBase + "/quotes/{quoteId}", ui.console("quotes", ui.consoleQuote)},
		{post, consoleBase + "/quotes/{quoteId}/cancel", ui.console("quotes", ui.quoteAction(operatorCancel, "Quote cancelled."))},
		{post, consoleBase + "/quotes/{quoteId}/complete", ui.console("quotes", ui.quoteAction(operatorComplete, "Quote completed."))},
		{get, consoleBase + "/clients", ui.console("clients", ui.consoleClients)},
		{post, consoleBase + "/clients", ui.console("clients", ui.consoleCreateClient)},
		{get, consoleBase + "/clients/{clientId}", ui.console("clients", ui.consoleClient)},
		{post, consoleBase + "/clients/{clientId}/keys", ui.console("clients", ui.consoleCreateKey)},
		{post, consoleBase + "/clients/{clientId}/credit", ui.console("clients", ui.consoleCredit)},
		{post, consoleBase + "/keys/{keyId}/revoke", ui.console("clients", ui.consoleRevokeKey)},
		{get, consoleBase + "/accounts/{accountId}", ui.console("clients", ui.consoleStatement)},
		{get, consoleBase + "/payins", ui.console("payins", ui.consolePayIns)},
		{post, consoleBase + "/payins/bank", ui.console("payins", ui.consoleBankReceipt)},
		{post, consoleStatementsPath, ui.console("payins", ui.consoleImportStatement)},
		{post, consoleBase + "/payins/unapplied/{unappliedId}/{action}", ui.console("payins", ui.consoleSettleUnapplied)},
		{get, consoleBase + "/webhooks", ui.console("webhooks", ui.consoleWebhooks)},
		{get, consoleBase + "/chains", ui.console("chains", ui.consoleChains)},
		{get, consoleBase + "/cluster", ui.console("cluster", ui.consoleSystem)},
		{get, consoleBase + "/audit", ui.console("audit", ui.consoleAudit)},
	}
}

// publicRouter serves publicRoutes; a path under the FX API that matches
// no route is refused in the FX API's XML.
func (s *Server) publicRouter() *router.Router {
	r := s.routerOf(s.publicRoutes())
	r.NotFound = s.fxOr(r.NotFound, errNotFound)
	r.MethodNotAllowed = s.fxOr(r.MethodNotAllowed, errMethod)
	s.checkDocumentedRoutes(r, openAPIPublic)
	return r
}

// adminRouter serves adminRoutes and consoleRoutes; /console redirects
// to /console/.
func (s *Server) adminRouter() *router.Router {
	s.ui = &consoleUI{s: s, tmpl: parseConsoleTemplates()}
	r := s.routerOf(append(s.adminRoutes(), s.ui.consoleRoutes()...))
	notFound := r.NotFound
	r.NotFound = func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == consoleBase {
			ctx.Redirect(consoleBase+"/", fasthttp.StatusFound)
			return
		}
		notFound(ctx)
	}
	s.checkDocumentedRoutes(r, openAPIAdmin)
	return r
}

// routerOf is a router serving routes and the health routes.
func (s *Server) routerOf(routes []route) *router.Router {
	r := s.baseRouter()
	for _, rt := range routes {
		r.Handle(rt.method, rt.path, rt.handle)
	}
	return r
}
