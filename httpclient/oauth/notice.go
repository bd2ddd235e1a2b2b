package oauth

import "time"

// A DeviceNotice is what a person needs to approve a device grant login:
// where, with which code, until when. It never holds the device code,
// which whoever holds it could redeem once the login is approved.
type DeviceNotice struct {
	VerificationURI         string
	VerificationURIComplete string // "" when the server gave none
	UserCode                string
	ExpiresIn               time.Duration
}

// noticeDevice passes d to Config.DeviceNotice.
func (a *Authorizer) noticeDevice(d *DeviceAuthorization) {
	if a.cfg.DeviceNotice == nil {
		return
	}
	n := DeviceNotice{VerificationURI: d.VerificationURI.String(), UserCode: d.UserCode, ExpiresIn: d.ExpiresIn}
	if d.VerificationURIComplete != nil {
		n.VerificationURIComplete = d.VerificationURIComplete.String()
	}
	a.cfg.DeviceNotice(a.server, n)
}
