package labnet

import (
	"bufio"
	"strconv"
	"strings"
)

func bufioScanner(s string) *bufio.Scanner { return bufio.NewScanner(strings.NewReader(s)) }

func itoa(i int) string { return strconv.Itoa(i) }
