package engine

// Text forms, so that ids and rates read naturally wherever a value is
// marshalled as text (JSON dumps of the log, logs).

func (id QuoteID) MarshalText() ([]byte, error)      { return []byte(id.String()), nil }
func (id PoolID) MarshalText() ([]byte, error)       { return []byte(id.String()), nil }
func (id ClientID) MarshalText() ([]byte, error)     { return []byte(id.String()), nil }
func (id AccountID) MarshalText() ([]byte, error)    { return []byte(id.String()), nil }
func (id KeyID) MarshalText() ([]byte, error)        { return []byte(id.String()), nil }
func (id AllocationID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }
func (r Rate) MarshalText() ([]byte, error)          { return AppendRate(nil, r), nil }
func (c Currency) MarshalText() ([]byte, error)      { return []byte(c.String()), nil }
func (m Mode) MarshalText() ([]byte, error)          { return []byte(m.String()), nil }
func (d Direction) MarshalText() ([]byte, error)     { return []byte(d.String()), nil }
func (c Chain) MarshalText() ([]byte, error)         { return []byte(c.String()), nil }
func (k SettlementKind) MarshalText() ([]byte, error) {
	return []byte(k.String()), nil
}
func (c Channel) MarshalText() ([]byte, error) {
	if c == ChannelXML {
		return []byte("xml"), nil
	}
	return []byte("json"), nil
}
