module github.com/oja-exchange/oja/client

go 1.23

require (
	github.com/shopspring/decimal v1.6.0
	go.uber.org/goleak v1.3.0
)
