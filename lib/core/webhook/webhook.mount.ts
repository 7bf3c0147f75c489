/**
 * The one rule comparing a registration's `webhook.publicUrl` with the route it actually serves
 * (the host's global prefix and mount path included). The URL's path must be the route's, or end
 * with it (a proxy in front may add a prefix of its own and strip it). Otherwise every delivery
 * gets 404, or lands on another route: said once, at start-up (Nest) or at the first delivery
 * (Express, whose mount path is known only then).
 * @param publicUrl the registration's `webhook.publicUrl`; nothing to compare when undefined
 * @param mountedPath the path the route is served at, e.g. `/api/payments/webhook`
 * @param registration how the registration is named in the message
 * @returns the warning to log, or undefined when the URL reaches the route
 */
export function publicUrlMismatch(
  publicUrl: string | undefined,
  mountedPath: string,
  registration: string,
): string | undefined {
  if (publicUrl === undefined || !URL.canParse(publicUrl)) return undefined;
  const published = trim(new URL(publicUrl).pathname);
  const mounted = trim(mountedPath);
  if (published === mounted || (mounted !== '' && published.endsWith(`/${mounted}`))) return undefined;
  return (
    `webhook.publicUrl of ${registration} has the path '/${published}' but its webhook route is served at '/${mounted}': ` +
    `the service's deliveries will get 404 or reach another route. Make webhook.publicUrl end with '/${mounted}' ` +
    '(or change webhook.path, the global prefix or the mount path)'
  );
}

function trim(path: string): string {
  return path.replace(/^\/+|\/+$/g, '');
}
