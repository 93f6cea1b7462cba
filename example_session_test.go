package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
)

// The examples drive their servers as a client would, through the
// in-memory transport: what they print is what a client receives. These
// helpers are the client's side, kept out of the examples' regions, which
// the documentation shows.

// exampleClient is a client of a server served over the in-memory
// transport.
type exampleClient struct {
	*MemoryClient
	served chan error
}

// serveExample serves d over the in-memory transport. When version names an
// initialize-era version, the client first runs initialize with the client
// capabilities caps (a JSON object) and sends notifications/initialized.
func serveExample(d Dispatcher, opts Options, version, caps string) *exampleClient {
	tr, client, err := NewMemoryTransport(d, opts)
	if err != nil {
		log.Fatal(err)
	}
	c := &exampleClient{MemoryClient: client, served: make(chan error, 1)}
	go func() { c.served <- tr.Serve(context.Background()) }()
	if version != ProtocolVersion20260728 {
		c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version +
			`","capabilities":` + caps + `,"clientInfo":{"name":"example","version":"1.0"}}}`)
		c.next()
		c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	return c
}

// send sends one message to the server.
func (c *exampleClient) send(msg string) {
	if err := c.Send(context.Background(), []byte(msg)); err != nil {
		log.Fatal(err)
	}
}

// next returns the next message the server wrote.
func (c *exampleClient) next() string {
	msg, err := c.Receive(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	return string(msg)
}

// call sends msg, a request, and prints every message the server writes
// until the response to it.
func (c *exampleClient) call(msg string) {
	var sent struct{ ID json.RawMessage }
	if err := json.Unmarshal([]byte(msg), &sent); err != nil {
		log.Fatal(err)
	}
	c.send(msg)
	for {
		got := c.next()
		fmt.Println(got)
		var m struct {
			ID     json.RawMessage
			Method *string
		}
		if json.Unmarshal([]byte(got), &m) == nil && m.Method == nil && string(m.ID) == string(sent.ID) {
			return
		}
	}
}

// close ends the client's input and prints what Serve returned.
func (c *exampleClient) close() {
	c.Close()
	fmt.Println("served:", <-c.served)
}
