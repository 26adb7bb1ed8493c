// Policy files shared by the CLI tests.

/** A shop: an allow rule that cannot judge a string amount, an allow, an ask, and a tool no rule allows. */
export const SHOP = `version: 1
tools:
  search:
    tags: [read_only]
    parameters:
      type: object
      properties: { query: { type: string } }
  tip:
    parameters:
      type: object
      properties: { amount: {} }
  refund:
    parameters:
      type: object
      properties: { amount: { type: number } }
  delete_account: {}
rules:
  - name: small_tips
    tools: tip
    when:
      amount: { lt: 10 }
    result: allow
  - name: searches
    tools: search
    result: allow
  - name: refunds_ask
    tools: refund
    result: ask
`;
