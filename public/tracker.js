/*! linktrack beacon: consent-gated, dependency-free. It sends nothing until the page calls
 *  LinkTracker.consent({ analytics: true|false, lan_ip: true|false }) from its own consent dialog. */
(function () {
  'use strict';
  if (window.LinkTracker && window.LinkTracker.version) return;
  var script = document.currentScript;
  var origin = new URL((script && script.src) || '/tracker.js', location.href).origin;
  var subdomain = script && script.getAttribute('data-subdomain');
  var PARAM = 'lt_visit';
  var WINDOW_MS = 864e5;
  /** What a LAN address looks like: an mDNS name (browsers hide local IPs so) or a private, link-local or CGNAT address. */
  var LAN = /^(?:[0-9a-f-]{36}\.local|10\.[\d.]+|192\.168\.[\d.]+|172\.(?:1[6-9]|2\d|3[01])\.[\d.]+|100\.(?:6[4-9]|[7-9]\d|1[01]\d|12[0-7])\.[\d.]+|169\.254\.[\d.]+|f[cd][0-9a-f]{2}:[0-9a-f:]+|fe80:[0-9a-f:%\w]+)$/i;
  var state = { visitId: redirectVisit(), token: null, expiresAt: 0, lanIp: false };

  /** The visit id the redirect appended (UUIDv7 of the last 24 hours), or null. */
  function redirectVisit() {
    var id = new URLSearchParams(location.search).get(PARAM);
    if (!id || !/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i.test(id)) return null;
    var at = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    return Date.now() - at < WINDOW_MS ? id.toLowerCase() : null;
  }

  /** POSTs JSON as text/plain (a simple request: no CORS preflight) and resolves with `data`. */
  function post(path, body) {
    return fetch(origin + path, {
      method: 'POST',
      mode: 'cors',
      credentials: 'omit',
      keepalive: true,
      headers: { 'Content-Type': 'text/plain;charset=UTF-8' },
      body: JSON.stringify(body)
    }).then(function (response) {
      return response.json().then(function (envelope) {
        if (!response.ok) {
          var error = new Error((envelope.error && envelope.error.message) || 'HTTP ' + response.status);
          error.code = envelope.error && envelope.error.code;
          throw error;
        }
        return envelope.data;
      });
    });
  }

  /** The LAN address of a WebRTC host candidate (an IP or an mDNS .local name), or null within 1.5 s. */
  function lanAddress() {
    return new Promise(function (resolve) {
      var Peer = window.RTCPeerConnection || window.webkitRTCPeerConnection;
      if (!Peer) return resolve(null);
      var peer;
      var done = function (value) {
        if (!peer) return;
        try { peer.close(); } catch (e) { /* closed */ }
        peer = null;
        resolve(value);
      };
      try {
        peer = new Peer({ iceServers: [] });
        peer.createDataChannel('lt');
        peer.onicecandidate = function (event) {
          if (!event.candidate) return done(null);
          var parts = event.candidate.candidate.split(' ');
          if (parts[7] === 'host' && LAN.test(parts[4] || '')) done(parts[4]);
        };
        peer.createOffer().then(function (offer) { return peer && peer.setLocalDescription(offer); }).catch(function () { done(null); });
        setTimeout(function () { done(null); }, 1500);
      } catch (e) {
        done(null);
      }
    });
  }

  function signals() {
    var connection = navigator.connection || {};
    var canvas = document.createElement('canvas');
    var data = {
      screen: { width: screen.width, height: screen.height, pixel_ratio: window.devicePixelRatio || 1, color_depth: screen.colorDepth },
      capabilities: {
        cookies: navigator.cookieEnabled,
        touch_points: navigator.maxTouchPoints || 0,
        hardware_concurrency: navigator.hardwareConcurrency || 0,
        languages: (navigator.languages || [navigator.language]).join(',').slice(0, 100),
        webgl: !!(canvas.getContext && canvas.getContext('webgl')),
        webrtc: typeof window.RTCPeerConnection === 'function',
        service_worker: 'serviceWorker' in navigator,
        do_not_track: navigator.doNotTrack === '1'
      }
    };
    if (navigator.deviceMemory) data.capabilities.device_memory = navigator.deviceMemory;
    try {
      data.timezone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    } catch (e) { /* no Intl */ }
    if (connection.effectiveType || connection.type) {
      data.network = {
        type: connection.type,
        effective_type: connection.effectiveType,
        downlink: connection.downlink,
        rtt: connection.rtt,
        save_data: connection.saveData
      };
    }
    return data;
  }

  /** Sends the signals under the consent token; the LAN address only with its own consent. */
  function collect() {
    if (!state.token || Date.now() >= state.expiresAt) return Promise.reject(new Error('no consent recorded'));
    var data = signals();
    return (state.lanIp ? lanAddress() : Promise.resolve(null)).then(function (lan) {
      if (lan) data.lan_ip = lan;
      data.token = state.token;
      return post('/tracker/collect', data);
    });
  }

  /** Records the visitor's decision; with analytics consent, collects at once. */
  function consent(choice) {
    choice = choice || {};
    var analytics = choice.analytics === true;
    var body = { analytics: analytics, lan_ip: analytics && (choice.lan_ip === true || choice.lanIp === true) };
    if (state.visitId) body.visit_id = state.visitId;
    else if (subdomain) {
      body.subdomain = subdomain;
      var query = new URLSearchParams(location.search);
      query.delete(PARAM);
      body.page = { referrer: document.referrer.slice(0, 2000), query: query.toString().slice(0, 4000) };
    } else return Promise.reject(new Error('tracker.js needs data-subdomain, or a page reached with ' + PARAM));
    return post('/tracker/consent', body).then(function (recorded) {
      // Null after a refusal without a visit: nothing was stored, a later consent starts the visit.
      if (recorded.visit_id) state.visitId = recorded.visit_id;
      state.token = recorded.token;
      state.expiresAt = recorded.expires_at ? Date.parse(recorded.expires_at) : 0;
      state.lanIp = recorded.lan_ip;
      if (!recorded.token) return recorded;
      return collect().then(function () { return recorded; });
    });
  }

  window.LinkTracker = {
    version: 1,
    consent: consent,
    collect: collect,
    visitId: function () { return state.visitId; }
  };
  try {
    window.dispatchEvent(new CustomEvent('linktracker:ready'));
  } catch (e) { /* old browser */ }
})();
