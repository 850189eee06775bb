// Package chat runs conversations: it keeps them (through the store), runs
// each turn (provider stream ↔ tool calls), and puts every tool call
// through the permission gate: the chat's mode and the guard (taint), with
// asks that wait an hour for the person.
//
// Every change is written to the store before it is published on the bus,
// so what a client sees has always been committed.
package chat
