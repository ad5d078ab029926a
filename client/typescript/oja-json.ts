import { parse, stringify, isLosslessNumber, LosslessNumber } from "lossless-json";
import { decimalMembers } from "./oja.js";

// parseOja reads an Oja answer: amounts and rates as their exact decimal
// text, every other number as a number (lossless-json throws rather than
// round one that does not fit).
export function parseOja(text: string): unknown {
  return parse(text, (key, value) =>
    isLosslessNumber(value) ? (decimalMembers.has(key) ? value.toString() : value.valueOf()) : value);
}

// stringifyOja writes a request: amounts and rates given as decimal text go
// on the wire as JSON numbers, digit for digit.
export function stringifyOja(body: unknown): string {
  return stringify(body, (key, value) =>
    decimalMembers.has(key) && typeof value === "string" ? new LosslessNumber(value) : value) ?? "";
}
