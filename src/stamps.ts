/**
 * Notes kept on an object itself, by private fields: a mark or a value an object carries for this process only,
 * where a WeakSet or WeakMap held each young object in an ephemeron table (a hash insert and the ephemeron write
 * barrier's slow path per call, and the table swept at every scavenge; issue 25.2).
 */

/**
 * The base of a class whose private fields are stamped on an object it is given: its constructor returns that
 * object, so a subclass's fields are added to it (its own keys, prototype and key order unchanged). No reflection
 * sees or copies a private field (`Object.keys`, `Reflect.ownKeys`, `getOwnPropertySymbols`, spread,
 * `Object.assign`, `structuredClone`, a Proxy's traps), `#field in o` reads `o`'s own fields only (not a Proxy's
 * target's, not a prototype's), and a private name is reachable only inside its class's body: a stamp cannot be
 * forged, copied or read outside the module that declares it.
 */
export class Stamped {
  constructor(target: object) {
    return target as Stamped;
  }
}
