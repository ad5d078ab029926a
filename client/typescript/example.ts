// node out/example.js — creates a quote on OJA_API (e.g.
// http://localhost:8080/api/v1) with OJA_KEY and prints its money as the
// service wrote it: amounts and rates as exact decimal text.
import type { components } from "./oja.js";
import { parseOja, stringifyOja } from "./oja-json.js";

declare const process: { env: Record<string, string | undefined> };

type CreateQuoteRequest = components["schemas"]["CreateQuoteRequest"];
type Quote = components["schemas"]["Quote"];

const request: CreateQuoteRequest = {
  sourceCurrency: "NGN", destinationCurrency: "USDT",
  amount: "1000000.55", rate: "0.0006", amountDirection: "source",
};
const res = await fetch(`${process.env.OJA_API}/partners/marketplace/intent`, {
  method: "POST",
  headers: { Authorization: `Bearer ${process.env.OJA_KEY}`, "Content-Type": "application/json" },
  body: stringifyOja(request),
});
const text = await res.text();
if (!res.ok) throw new Error(`${res.status}: ${text}`);
const quote = parseOja(text) as Quote;
console.log(quote.amount, quote.allocationResult.totalDestinationAmount, quote.allocationResult.weightedAverageRate, quote.ttl);
