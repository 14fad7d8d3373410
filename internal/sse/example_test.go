package sse_test

import (
	"fmt"
	"strings"

	"github.com/harn-conform/conform/internal/sse"
)

func ExampleReader() {
	stream := ": keep-alive\r\n\r\nid: 41\r\nevent: task.updated\r\ndata: {\"status\":\"RUNNING\"}\r\n\r\n"
	r := sse.NewReader(strings.NewReader(stream), sse.Options{})
	for {
		f, err := r.Next()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("comments=%q id=%q event=%q data=%q dispatch=%v\n", f.Comments, f.ID, f.Event, f.Data, f.HasData)
	}
	// Output:
	// comments=[" keep-alive"] id="" event="" data="" dispatch=false
	// comments=[] id="41" event="task.updated" data="{\"status\":\"RUNNING\"}" dispatch=true
	// EOF
}
