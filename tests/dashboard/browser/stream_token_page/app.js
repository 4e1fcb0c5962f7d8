// A customer's page: its server minted a stream token and put it, with the stream's URL, in the fragment
// (#stream=…&token=…). Renders text_chunk deltas as they come and closes on [DONE]. Counts what a test
// checks: connections opened, and every event's cursor (a repeated one would be text shown twice).
const params = new URLSearchParams(location.hash.slice(1));
const answer = document.getElementById("answer");
const status = document.getElementById("status");
window.opens = 0;
window.cursors = [];
const source = new EventSource(params.get("stream") + "?token=" + encodeURIComponent(params.get("token")));
source.onopen = () => { window.opens += 1; status.textContent = "open"; };
source.onerror = () => { status.textContent = source.readyState === EventSource.CLOSED ? "refused" : "reconnecting"; };
source.onmessage = (message) => {
  if (message.data === "[DONE]") { source.close(); status.textContent = "done"; return; }
  const event = JSON.parse(message.data);
  window.cursors.push(event.cursor);
  if (event.type === "text_chunk") answer.textContent += event.delta;
};
